"""A call on an object of no known class (handed in by the user, built by a config factory, an
unannotated parameter) runs the project's methods of that name when the name is distinctive
(analyzer/untyped_calls.py); a name library objects answer to, or one many classes define, is
not guessed."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import project_diagnostics, project_findings

MEMORY = """\
    import torch


    class ReplayMemory:
        def sample_batch(self, n):
            idx = torch.randint(0, 10, (n,))
            return self.rows[idx].cuda()
"""

TRAINER = """\
    import torch


    class Trainer:
        def __init__(self, memory, cfg):
            self.memory = memory
            self.pre = cfg.build_preprocessor()

        def train_step(self, x, recorder):  # graphsafe: region
            batch = self.memory.sample_batch(4)
            y = self.pre.scale_inputs(x)
            recorder.record_losses(y)
            self.memory.sample(x)
            return batch.sum() + y.sum()
"""

HELPERS = """\
    class Scaler:
        def scale_inputs(self, x):
            print("scaling")
            return x * 2


    class Recorder:
        def record_losses(self, y):
            self.rows.append(y.item())


    class Sampler:
        def sample(self, x):
            print(x.item())
"""


def test_a_method_of_an_attribute_with_no_known_class_runs_by_its_name(tmp_path):
    found = project_findings(tmp_path, {"memory.py": MEMORY, "trainer.py": TRAINER, "helpers.py": HELPERS})
    assert ("memory.py", 7, "GS402") in found
    assert ("helpers.py", 3, "GS501") in found


def test_a_method_of_an_unannotated_parameter_runs_by_its_name(tmp_path):
    found = project_findings(tmp_path, {"memory.py": MEMORY, "trainer.py": TRAINER, "helpers.py": HELPERS})
    assert ("helpers.py", 9, "GS101") in found


def test_a_name_library_objects_answer_to_is_not_guessed(tmp_path):
    # `self.memory.sample(x)` may be a distribution's `sample`: Sampler.sample is not taken to run
    found = project_findings(tmp_path, {"memory.py": MEMORY, "trainer.py": TRAINER, "helpers.py": HELPERS})
    assert not any(name == "helpers.py" and line == 14 for name, line, _ in found)


def test_a_name_many_classes_define_is_not_guessed(tmp_path):
    many = "".join(f"""
    class Scaler{i}:
        def scale_inputs(self, x):
            print("scaling {i}")
            return x * {i}
""" for i in range(4))
    found = project_findings(tmp_path, {"memory.py": MEMORY, "trainer.py": TRAINER, "helpers.py": many})
    assert not any(name == "helpers.py" for name, _, _ in found)


SVI = """\
    import torch


    class SVI:
        def __init__(self, model, loss):
            self.model = model
            self.loss_and_grads = loss.loss_and_grads

        def step(self, x):  # graphsafe: region
            return self.loss_and_grads(self.model, x)
"""

ELBO = """\
    class TraceELBO:
        def loss_and_grads(self, model, x):
            loss = model(x)
            print("computing the loss")
            return loss
"""


def test_an_attribute_bound_to_a_method_of_an_object_of_no_known_class_runs_it_by_name(tmp_path):
    found = project_findings(tmp_path, {"svi.py": SVI, "elbo.py": ELBO})
    assert ("elbo.py", 4, "GS501") in found


def test_of_same_named_methods_in_different_packages_the_nearest_runs(tmp_path):
    agent = """\
        class Agent:
            def __init__(self, models):
                self.target = models["target"]

            def update(self, x):  # graphsafe: region
                self.target.update_parameters(x, polyak=0.5)
                return x
    """
    torch_model = """\
        class Model:
            def update_parameters(self, x, polyak):
                print("torch update")
    """
    jax_model = """\
        class Model:
            def update_parameters(self, x, polyak):
                print("jax update")
    """
    packages = {f"pkg/{d}/__init__.py": "" for d in ("", "agents", "agents/torch", "models", "models/torch", "models/jax")}
    found = project_diagnostics(tmp_path, {**packages, "pkg/agents/torch/dqn.py": agent,
                                           "pkg/models/torch/base.py": torch_model,
                                           "pkg/models/jax/base.py": jax_model})
    in_models = sorted(Path(d.path).parent.name for d in found if "models" in d.path)
    assert in_models == ["torch"]


def test_the_implementations_of_one_base_count_once(tmp_path):
    devices = """\
        import torch


        class Device:
            def tensor_to_device(self, t):
                raise NotImplementedError
    """ + "".join(f"""

        class Device{i}(Device):
            def tensor_to_device(self, t):
                print("moving {i}")
                return t
    """ for i in range(5))
    trainer = """\
        class Trainer:
            def __init__(self, state):
                self.state = state

            def train_batch(self, x):  # graphsafe: region
                return self.state.device.tensor_to_device(x)
    """
    found = project_findings(tmp_path, {"devices.py": devices, "trainer.py": trainer}, code="GS501")
    assert {line for name, line, _ in found if name == "devices.py"} == {11 + 6 * i for i in range(5)}


def test_a_method_many_subclasses_override_is_not_guessed(tmp_path):
    layers = """\
        class BaseLayer:
            def update_layer(self, x):
                pass
    """ + "".join(f"""

        class Layer{i}(BaseLayer):
            def update_layer(self, x):
                print("updating {i}")
    """ for i in range(9))
    model = """\
        class Model:
            def __init__(self, layer):
                self.layer = layer

            def forward(self, x):  # graphsafe: region
                self.layer.update_layer(x)
                return x
    """
    found = project_findings(tmp_path, {"layers.py": layers, "model.py": model})
    assert not any(name == "layers.py" for name, _, _ in found)
