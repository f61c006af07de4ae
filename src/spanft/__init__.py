"""spanft: Span Fine-tuning for Pre-trained Language Models, reproduced as a DVC pipeline."""

__version__ = "0.1.0"
