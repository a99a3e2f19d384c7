import shutil, sys, torch
from pathlib import Path
from botgrpo_cli.bootstrap.model import make_model
from botgrpo_cli.models.loading import load_tokenizer
src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
tok = load_tokenizer(str(src))
torch.manual_seed(0)
make_model("small", len(tok), tok.eos_token_id, tok.pad_token_id, max_positions=256).save_pretrained(out)
for f in src.glob("tokenizer*"):
    shutil.copy(f, out / f.name)
print(out)
