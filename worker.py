"""Entry point of the worker (the same as the ``agent-worker`` console script):

    python worker.py --workspace ./my-project --dev-server
"""

from cli.worker import main

if __name__ == "__main__":
    main()
