"""Front-ends: other protocols that drive the same turns (MCP)."""
