"""`python -m rabbitish serve ...`: the same command line as the `rabbitish` script."""

from rabbitish.cli.main import app

if __name__ == "__main__":
    app(prog_name="rabbitish")
