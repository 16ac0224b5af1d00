"""``python -m roost.daemons.startd``."""

from roost.daemons.startd.daemon import main

if __name__ == "__main__":
    main()
