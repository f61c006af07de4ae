"""Synthetic data: an English-like language (its lexicon, grammar and sampler) and stand-ins for every task."""
