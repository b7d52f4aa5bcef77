"""Tool implementations: the only code that touches files and processes. Each
tool is a Temporal activity whose activity type is the tool's name."""
