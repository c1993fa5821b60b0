"""Keras 3's catalog (catalogs/keras: the distribution API, fit/compile, saving and loading) reads
its messages as a reviewer would, and the real lines users pasted get the class their text states.

Each message below is a format string from the named Keras release's source, at the level it is
raised or warned at; each real line is copied from the public thread named beside it.
"""

from __future__ import annotations

import pytest

from denpex.match.scan import Matcher
from tests.catalogs.mappings import assert_emitter_class, decide

FAMILY = "keras_cat"


@pytest.mark.parametrize(
    ("text", "level", "file", "disposition", "failure_class"),
    [
        # 3.15 keras/src/distribution/distribution_lib.py (DeviceMesh)
        (
            "Shape does not match the number of devices. Received: shape={shape}; "
            "devices.shape={devices.shape}",
            "ValueError",
            "keras/src/distribution/distribution_lib.py",
            "mapped",
            "framework_config_error",
        ),
        # 3.15 keras/src/distribution/distribution_lib.py (LayoutMap)
        (
            "Path '{key}' matches multiple layout specification keys: {matching_keys}. Please make "
            "sure each tensor/variable path only matches at most one layout specification key in "
            "the LayoutMap.",
            "ValueError",
            "keras/src/distribution/distribution_lib.py",
            "mapped",
            "framework_config_error",
        ),
        # 3.15 keras/src/distribution/distribution_lib.py (ModelParallel.distribute_dataset)
        (
            "Global batch size must be divisible by the number of processes. "
            "`global_batch_size`={global_batch_size} and `num_processes`={self.num_processes}",
            "ValueError",
            "keras/src/distribution/distribution_lib.py",
            "mapped",
            "framework_config_error",
        ),
        # 3.15 keras/src/backend/jax/distribution_lib.py (keras.distribution.initialize)
        (
            "The provided job_addresses {job_addresses} has {len(job_addresses)} jobs, but "
            "num_processes is {num_processes}",
            "ValueError",
            "keras/src/backend/jax/distribution_lib.py",
            "mapped",
            "launch_config_error",
        ),
        # 3.15 keras/src/layers/layer.py (_check_load_own_variables)
        (
            "Layer '{self.name}' expected {len(all_vars)} variables, but received "
            "{len(store.keys())} variables during loading. Expected: "
            "{[v.name for v in all_vars]}",
            "ValueError",
            "keras/src/layers/layer.py",
            "mapped",
            "checkpoint_mismatch",
        ),
        # 3.15 keras/src/layers/input_spec.py
        (
            'Input {input_index} of layer "{layer_name}" is incompatible with the layer: expected '
            "shape={spec.shape}, found shape={shape}",
            "ValueError",
            "keras/src/layers/input_spec.py",
            "mapped",
            "shape_or_dtype_error",
        ),
        # 3.15 keras/src/models/functional.py (functional_from_config): "disconnected" is the
        # model's graph, not a peer that went away
        (
            "Invalid Functional model configuration. The graph of the Functional model either has "
            "loops or disconnected nodes. The following nodes failed to be resolved: "
            "{unprocessed_nodes}",
            "ValueError",
            "keras/src/models/functional.py",
            "mapped",
            "checkpoint_mismatch",
        ),
        # 3.15 keras/src/models/cloning.py: a keyword argument, not a checkpoint's unexpected key
        (
            "Unexpected keyword argument(s): {tuple(kwargs.keys())}",
            "ValueError",
            "keras/src/models/cloning.py",
            "mapped",
            "framework_config_error",
        ),
        # 3.15 keras/src/saving/saving_lib.py: the path's extension, not a checkpoint that does
        # not fit the model
        (
            "Invalid `filepath` argument: expected a `.keras` extension. Received: "
            "filepath={filepath}",
            "ValueError",
            "keras/src/saving/saving_lib.py",
            "mapped",
            "framework_config_error",
        ),
        # 3.3 keras/src/saving/saving_api.py: raised in Keras 3, not a deprecation notice
        (
            "The `save_format` argument is deprecated in Keras 3. Please remove this argument and "
            "pass a file path with either `.keras` or `.h5` extension.Received: "
            "save_format={save_format}",
            "ValueError",
            "keras/src/saving/saving_api.py",
            "mapped",
            "framework_config_error",
        ),
        # 3.15 keras/src/saving/saving_api.py (absl): a notice about the legacy format
        (
            "You are saving your model as an HDF5 file via `model.save()` or "
            "`keras.saving.save_model(model)`. This file format is considered legacy. We recommend "
            "using instead the native Keras format, e.g. `model.save('my_model.keras')` or "
            "`keras.saving.save_model(model, 'my_model.keras')`. ",
            "WARNING",
            "keras/src/saving/saving_api.py",
            "excluded",
            None,
        ),
        # 3.15 keras/src/trainers/epoch_iterator.py: the epoch ends early, the run goes on
        (
            "Your input ran out of data; interrupting epoch. Make sure that your dataset or "
            "generator can generate at least `steps_per_epoch * epochs` batches. You may need to "
            "use the `.repeat()` function when building your dataset.",
            "UserWarning",
            "keras/src/trainers/epoch_iterator.py",
            "context",
            None,
        ),
        # 3.15 keras/src/legacy/saving/legacy_h5_format.py: skip_mismatch=True skips, as asked
        (
            "Skipping loading weights for layer #{k} (named {layer.name}) due to mismatch in shape "
            "for weight {symbolic_weights[i].path}. Weight expects shape {expected_shape}. "
            "Received saved weight with shape {received_shape}",
            "UserWarning",
            "keras/src/legacy/saving/legacy_h5_format.py",
            "context",
            None,
        ),
    ],
)
def test_keras_messages(
    text: str, level: str, file: str, disposition: str, failure_class: str | None
) -> None:
    decision = decide("keras", text, level, file)
    assert decision.disposition == disposition
    assert decision.failure_class == failure_class


def test_an_unexplained_keras_error_is_an_unclear_symptom() -> None:
    # 3.15 keras/src/optimizers/base_optimizer.py (tf backend: keras/src/backend/tensorflow/
    # optimizer.py): the loss does not reach the variables; the line does not say why
    decision = decide(
        "keras",
        "No gradients provided for any variable: {variable}. Provided `grads_and_vars` is "
        "{grads_and_vars}.",
        "ValueError",
        "keras/src/backend/tensorflow/optimizer.py",
    )
    assert decision.disposition == "mapped"
    assert decision.failure_class == "python_exception"
    assert decision.confidence is not None and decision.confidence <= 0.35


@pytest.mark.parametrize(
    ("text", "failure_class"),
    [
        # github.com/keras-team/keras-cv/issues/1990
        (
            "ValueError: Layer 'conv1_conv' expected 1 variables, but received 0 variables during"
            " loading. Expected: ['kernel']",
            "checkpoint_mismatch",
        ),
        # github.com/keras-team/keras/issues/19615
        (
            "/usr/local/lib/python3.10/dist-packages/keras/src/saving/saving_lib.py:418: "
            "UserWarning: Skipping variable loading for optimizer 'adam', because it has 44 "
            "variables whereas the saved optimizer has 32 variables. ",
            "checkpoint_mismatch",
        ),
        # github.com/remigenet/TKAN/issues/12
        (
            "ValueError: A total of 4 objects could not be loaded. Example error message for "
            "object <KANLinear name=kan_linear, built=True>:",
            "checkpoint_mismatch",
        ),
        # github.com/keras-team/keras/issues/19367
        (
            'Input 0 of layer "dense_2" is incompatible with the layer: expected axis -1 of input '
            "shape to have value 16384, but received input with shape (None, 65536)",
            "shape_or_dtype_error",
        ),
        # github.com/keras-team/keras/issues/20806
        (
            "TypeError: Could not locate function 'attention_loss'. Make sure custom classes are "
            "decorated with `@keras.saving.register_keras_serializable()`. Full object config: "
            "{'module': 'builtins', 'class_name': 'function', 'config': 'attention_loss', "
            "'registered_name': 'function'}",
            "checkpoint_mismatch",
        ),
        # github.com/pavlo-melnyk/offline-HCCR/issues/5
        (
            "ValueError: Layer count mismatch when loading weights from file. Model expected 29 "
            "layers, found 30 saved layers.",
            "checkpoint_mismatch",
        ),
    ],
)
def test_a_real_keras_line_gets_its_class(matcher: Matcher, text: str, failure_class: str) -> None:
    assert_emitter_class(matcher, text, FAMILY, failure_class)


def test_healthy_keras_progress_lines_meet_no_catalog_signature(matcher: Matcher) -> None:
    # the epoch summary of a fit() that ran (verbose=2)
    healthy = (
        "Epoch 1/10\n"
        "213/213 - 6s - 21ms/step - accuracy: 0.8814 - loss: 0.4126 - val_accuracy: 0.9540"
        " - val_loss: 0.1550\n"
        "Epoch 2/10\n"
    )
    assert not [m for m in matcher.scan_text(healthy) if m.signature.family == FAMILY]
