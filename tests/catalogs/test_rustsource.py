"""The shared Rust reader (catalogs/rustsource.py): literals, levels, comments and test modules."""

from __future__ import annotations

from pathlib import Path

from catalogs import rustsource


def test_a_string_literal_is_decoded_plain_raw_and_continued() -> None:
    assert rustsource.string_at('  "a\\"b\\n"', 0) == ('a"b\n', False)
    assert rustsource.string_at('r#"say "hi""#', 0) == ('say "hi"', True)
    assert rustsource.string_at('"one \\\n        two"', 0) == ("one two", False)
    assert rustsource.string_at("x", 0) is None


def test_the_default_forms_are_tgi_s() -> None:
    src = (
        "fn launch() {\n"
        '    tracing::error!(target: "launcher", "Shard {rank} crashed");\n'
        '    warn!("Disk is {pct}% full");\n'
        '    bail!("no GPU found");\n'
        '    let x = y.expect("Unexpected tokenization failure");\n'
        "}\n"
    )
    found = [(m.text, m.style, m.line, m.level, m.function) for m in rustsource.messages(src)]
    assert found == [
        ("Shard {rank} crashed", "fmt", 2, "ERROR", "launch"),
        ("Disk is {pct}% full", "fmt", 3, "WARN", "launch"),
        ("no GPU found", "literal", 4, "panic", "launch"),
        ("Unexpected tokenization failure", "literal", 5, "panic", "launch"),
    ]


def test_comments_and_test_modules_are_left_out_when_asked() -> None:
    src = (
        "/// ```\n"
        '/// bail!("in a doc example");\n'
        "/// ```\n"
        "fn f() {\n"
        '    let s = "// not a comment"; // bail!("in a comment")\n'
        "    let c = '\"';\n"
        '    bail!("kept {s}");\n'
        "}\n"
        "#[cfg(test)]\n"
        "mod tests {\n"
        "    #[test]\n"
        '    fn t() { let v = x.expect("in a test"); }\n'
        "}\n"
        '/* a /* nested */ bail!("block comment") */\n'
    )
    every = [m.text for m in rustsource.messages(src)]
    assert every == [
        "in a doc example",
        "in a comment",
        "kept {s}",
        "in a test",
        "block comment",
    ]
    kept = list(rustsource.messages(src, blank=True, skip_tests=True))
    assert [(m.text, m.line) for m in kept] == [("kept {s}", 7)]


def test_blanking_keeps_offsets_and_lines() -> None:
    src = 'a // x\n/* y\n z */ "s // t" r#"u"#\n'
    blanked = rustsource.blank_comments(src)
    assert len(blanked) == len(src)
    assert blanked.count("\n") == src.count("\n")
    assert '"s // t"' in blanked and 'r#"u"#' in blanked
    assert "x" not in blanked and "y" not in blanked


def test_scan_rust_reads_the_named_folders_in_sorted_order(tmp_path: Path) -> None:
    for name, text in (("b.rs", 'fn b() { panic!("second one"); }'), ("a.rs", "fn a() {}")):
        path = tmp_path / "src" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    (tmp_path / "other").mkdir()
    (tmp_path / "other/c.rs").write_text('fn c() { panic!("not read"); }')
    assert rustsource.scan_rust(tmp_path, ("src", "missing")) == [
        ("second one", "literal", "src/b.rs", 1, "panic", "b")
    ]


def test_bindgen_enum_members_are_read_once_across_cuda_versions() -> None:
    src = (
        '#[cfg(any(feature = "cuda-11040"))]\n'
        "pub enum cudaError_enum {\n"
        "    CUDA_SUCCESS = 0,\n"
        "    CUDA_ERROR_OUT_OF_MEMORY = 2,\n"
        "}\n"
        '#[cfg(any(feature = "cuda-12080"))]\n'
        "pub enum cudaError_enum {\n"
        "    CUDA_SUCCESS = 0,\n"
        "    CUDA_ERROR_OUT_OF_MEMORY = 2,\n"
        "    CUDA_ERROR_STUB_LIBRARY = 34,\n"
        "}\n"
        "pub enum other { OTHER = 1 }\n"
    )
    assert rustsource.enum_members(src, "cudaError_enum") == [
        ("CUDA_SUCCESS", 3),
        ("CUDA_ERROR_OUT_OF_MEMORY", 4),
        ("CUDA_ERROR_STUB_LIBRARY", 10),
    ]


def test_error_variants_and_the_texts_built_from_them() -> None:
    enums = (
        "#[derive(thiserror::Error, Debug)]\n"
        "pub enum CudaError {\n"
        "    #[error(transparent)]\n"
        "    Cuda(#[from] DriverError),\n"
        "    /// a doc comment between the attribute and the variant is skipped\n"
        "    #[error(\"internal error '{0}'\")]\n"
        "    InternalError(&'static str),\n"
        '    #[error("{msg}, expected: {expected:?}, got: {got:?}")]\n'
        "    UnexpectedDType { msg: &'static str, expected: DType, got: DType },\n"
        '    #[error("shape mismatch in {op}, lhs: {lhs:?}, rhs: {rhs:?}")]\n'
        "    ShapeMismatchBinaryOp { lhs: Shape, rhs: Shape, op: &'static str },\n"
        "}\n"
    )
    assert [(e, v, line) for e, v, _fmt, line in rustsource.error_variants(enums)] == [
        ("CudaError", "InternalError", 6),
        ("CudaError", "UnexpectedDType", 8),
        ("CudaError", "ShapeMismatchBinaryOp", 10),
    ]
    formats = rustsource.error_formats(enums)
    uses = (
        "fn matmul() {\n"
        '    Err(CudaError::InternalError("dtype mismatch in {matmul}"))?;\n'
        '    Err(CudaError::UnexpectedDType { msg: "ids should be u8", expected, got })?;\n'
        '    Err(CudaError::ShapeMismatchBinaryOp { lhs, rhs, op: "matmul" })?;\n'
        "}\n"
    )
    built = [(m.text, m.line, m.function) for m in rustsource.constructed(uses, formats, "Error")]
    # the shape variant's own text is specific enough: it is read as it stands, not per op
    assert built == [
        ("internal error 'dtype mismatch in {{matmul}}'", 2, "matmul"),
        ("ids should be u8, expected: {expected:?}, got: {got:?}", 3, "matmul"),
    ]
