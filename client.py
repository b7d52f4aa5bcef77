"""Entry point of the command-line client (the same as the ``agent-turn``
console script):

    python client.py run --workspace DIR --calls calls.json
"""

from cli.turn import main

if __name__ == "__main__":
    main()
