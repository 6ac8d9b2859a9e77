"""Real multimodal benchmark pipeline: `python3 -m simreplay_capture.bench {make-dataset,run}`."""
