"""Her replies through an OpenAI-compatible chat endpoint: the request read, her system prompt, and the told rule."""
