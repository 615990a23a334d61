"""`python -m runlocal`: the `runlocal` command, as the installed entry point starts it (cli_check.main)."""

from .cli_check import main

main()
