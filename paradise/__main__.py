"""``python -m paradise``."""

from paradise.cli import main

main()
