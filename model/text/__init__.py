"""Text renderers: how reports, summaries, durations and sizes are printed, by the CLI and the app."""
