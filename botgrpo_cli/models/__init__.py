"""Model files, below both the trainer and evaluation: loading a causal LM, its tokenizer and a LoRA
adapter (loading.py), GGUF files (gguf.py) and the bf16 autocast rule (precision.py)."""
