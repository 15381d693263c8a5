"""Command line (installed as rabbitish.cli)."""
