"""botgrpo tasks: prompts, references, reward wiring and eval metrics (entry points `botgrpo.tasks`)."""
