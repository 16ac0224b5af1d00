"""``python -m roost.daemons.schedd``: run the schedd (ROOST_HOME names the pool's directory)."""

from roost.daemons.schedd.daemon import main

if __name__ == "__main__":
    main()
