"""The JSON import pipeline's stages: stream, decode, digest (on two cores), collect, assemble."""
