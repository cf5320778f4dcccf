"""``python -m aitco``: the same command line as the ``aitco`` script."""

from aitco.cli.app import main

if __name__ == "__main__":
    main()
