"""Drive a live server with growing prompts, then growing concurrency, and measure what holds."""
