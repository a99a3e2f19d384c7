"""A byte-level BPE tokenizer trained on a task's corpus, wrapped so transformers reloads it as is."""

from __future__ import annotations

from collections.abc import Iterable
import json
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

EOS = "<|endoftext|>"
PAD = "<|pad|>"


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Byte-level BPE with eos and pad. Digits stay one per token (arithmetic stays learnable);
    merges may span punctuation but not spaces, so code idioms like `}</span>` become one token."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.Split(Regex(r"\s*\S+"), behavior="isolated"),  # a word with the space before it
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=PAD)


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, out: Path) -> None:
    """Save so that AutoTokenizer gives back this exact tokenizer. transformers 5 replaces the
    pre-tokenizer of a tokenizer it maps to Qwen2Tokenizer; for model_type qwen3 it honours the
    declared generic class, which is why model.py builds a Qwen3 config."""
    tokenizer.save_pretrained(out)
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")
