"""`python -m denpex` runs the command line."""

from denpex.cli import main

main()
