"""Load a downloaded checkpoint folder the way a user does — plain transformers + PEFT, nothing of Rollbook
but the path of the converted base model — and report what was loaded, as one JSON line.

    python tests/load_peft_folder.py <base model name or dir> <peft folder>

Used by features/checkpoints/server/checkpoints.servertest.ts on the folder it untarred from the web download. PEFT
only warns about adapter keys it could not place, so "it loaded" proves little: this compares every tensor
PEFT holds after loading with the file's, and checks the adapter changes the base model's logits.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from peft import PeftModel
from peft.utils import get_peft_model_state_dict
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: make rollbook_engine importable
from rollbook_engine.model_loader import ensure_local


def main(base_name: str, folder: str) -> dict:
    source = ensure_local(base_name)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    base = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, local_files_only=True)
    base.eval()
    ids = tokenizer("Say the word: apple", return_tensors="pt").input_ids
    with torch.no_grad():
        before = base(ids).logits
    model = PeftModel.from_pretrained(base, folder)  # wraps `base` in place: logits above were taken first
    model.eval()
    saved = load_file(f"{folder}/adapter_model.safetensors")
    loaded = get_peft_model_state_dict(model)
    same_keys = set(saved) == set(loaded)
    equal = same_keys and all(torch.equal(saved[k], loaded[k].to(saved[k].dtype).cpu()) for k in saved)
    with torch.no_grad():
        after = model(ids).logits
    return {
        "tensors": len(saved),
        "same_keys": same_keys,
        "equal": equal,
        "peft_type": str(model.peft_config["default"].peft_type.value),
        "max_abs_lora_b": max((float(v.abs().max()) for k, v in saved.items() if "lora_B" in k), default=0.0),
        "logits_max_abs_diff": float((after - before).abs().max()),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
