"""`python -m gpubot.cli`: the same as the `gpubot` command."""

from gpubot.cli.main import main

if __name__ == "__main__":
    main()
