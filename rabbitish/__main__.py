"""`python -m rabbitish serve ...`: the same command line as the `rabbitish` script."""

import sys

from rabbitish.cli.main import app

if __name__ == "__main__":
    sys.exit(app(prog_name="rabbitish"))
