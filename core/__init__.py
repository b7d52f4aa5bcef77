"""Pure building blocks: contracts, argument parsing, policy, stage planning,
formatting and shell validation. Nothing here does I/O or talks to Temporal,
so the workflow sandbox can import all of it."""
