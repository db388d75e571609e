"""SPEC section 6 from Python: a checkpoint that hkt-train --resume and hkt-inspect load.

    save_hkt_checkpoint(model.state_dict(), config, "checkpoint.safetensors")

state_dict: the parameters under the SPEC names (torch tensors or numpy arrays;
float32, float64, float16 or bfloat16). config: the model config as a dict
(attention, vocab, max_len, d_model, n_layers, n_heads, d_ff, classes, levels,
stride, down_kernel, conv_kernel, causal). No checksum, step or optimizer state
is needed: hkt-train --resume starts a fresh AdamW at step 0 and says so.
"""
import json


def save_hkt_checkpoint(state_dict, config, path):
    metadata = {"config": json.dumps(config)}
    if all(hasattr(value, "detach") for value in state_dict.values()):  # torch tensors
        from safetensors.torch import save_file
        save_file({name: value.detach().contiguous() for name, value in state_dict.items()}, path, metadata=metadata)
    else:  # numpy arrays
        from safetensors.numpy import save_file
        save_file(dict(state_dict), path, metadata=metadata)
