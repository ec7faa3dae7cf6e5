"""
What DDPG and AblatableTD3 share, besides their ``train()``: SB3 checkpoint interop, the load checks, the policy
arguments implied by the algorithm's own arguments, and the speed and collection levers.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import io
import os
import pathlib
import warnings
import weakref
import zipfile
from collections.abc import Iterable
from typing import Any, ClassVar, TypeVar, cast

import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer, NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.save_util import json_to_data, open_path, recursive_getattr, save_to_pkl, save_to_zip_file
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.her import HerReplayBuffer
from stable_baselines3.td3 import policies as sb3_td3_policies

from sb3_ablation.common.buffers import FastReplayBuffer, sharing_storage
from sb3_ablation.common.collection import LeanCollectionMixin
from sb3_ablation.common.mixed_precision import SpeedModeMixin
from sb3_ablation.common.policies import Actor, Critic, DDPGPolicy
from sb3_ablation.common.saved_models import check_saved_algorithm
from sb3_ablation.common.training_stats import TrainingStats, log_training
from sb3_ablation.common.utils import UnsupportedActionSpaceError, check_keyword_arguments, user_stacklevel
from sb3_ablation.common.zoo_budget import default_budget

SelfActorCritic = TypeVar("SelfActorCritic", bound="OffPolicyActorCritic")
#: the models warned that their ``learn()`` trained nothing
WARNED_NOTHING_TRAINED: weakref.WeakSet[OffPolicyActorCritic] = weakref.WeakSet()


def progress_bar_available() -> bool:
    """Whether SB3's progress bar can be shown (it needs tqdm and rich)."""
    return importlib.util.find_spec("tqdm") is not None and importlib.util.find_spec("rich") is not None


# SB3's TD3 policies (SB3's DDPG uses them too), by alias: our policies have the same modules and parameters
SB3_TD3_POLICIES: dict[str, type[BasePolicy]] = {
    "MlpPolicy": sb3_td3_policies.MlpPolicy,
    "CnnPolicy": sb3_td3_policies.CnnPolicy,
    "MultiInputPolicy": sb3_td3_policies.MultiInputPolicy,
}
SB3_POLICY_ARGUMENTS = set(inspect.signature(sb3_td3_policies.TD3Policy.__init__).parameters) - {"self"}


class OffPolicyActorCritic(SpeedModeMixin, LeanCollectionMixin, OffPolicyAlgorithm):
    """
    The base of DDPG and AblatableTD3: a deterministic-policy-gradient actor-critic on SB3's ``OffPolicyAlgorithm``
    whose checkpoints are SB3's where SB3 can represent the model. Subclasses write ``train()``.

    Parameters as SB3's ``OffPolicyAlgorithm``, and:

    :param speed_mode: Train faster at the cost of bit-exactness with SB3, the same algorithm (see
        :mod:`sb3_ablation.common.mixed_precision`)
    """

    # Written into policy_kwargs unless given (SB3's DDPG writes n_critics=1)
    policy_kwargs_defaults: ClassVar[dict[str, Any]] = {}
    # Policy arguments set by the algorithm's own arguments (see `_implied_policy_kwargs`), not by policy_kwargs
    implied_policy_arguments: ClassVar[tuple[str, ...]] = ("batched_critics", "fused_adam", "bfloat16_batch_size")
    # Keywords that a message about a misspelt keyword lists as a reminder
    highlighted_keywords: ClassVar[tuple[str, ...]] = ()
    # The shipped zoo config whose n_timesteps is learn()'s default budget (zoo_configs/<name>.yml)
    zoo_config: ClassVar[str] = "ablatable_td3"
    # The algorithms whose saved models `load` takes (see sb3_ablation.common.saved_models.LOADERS)
    loadable_algorithms: ClassVar[tuple[str, ...]] = ()
    # Set by from_zoo: the zoo entry's budget and where it comes from, and the entry's callbacks (not saved)
    _zoo_budget: tuple[int, str] | None = None
    _zoo_callbacks: tuple[BaseCallback, ...] = ()

    policy: DDPGPolicy
    replay_buffer: ReplayBuffer  # set up by _setup_model (SB3 types it optional)
    actor: Actor
    actor_target: Actor | None
    critic: Critic
    critic_target: Critic | None

    def __new__(cls, *args: Any, **kwargs: Any):
        # A misspelt keyword gets a message naming the closest valid one (before Python's bare TypeError)
        check_keyword_arguments(cls, kwargs, highlighted=cls.highlighted_keywords)
        return super().__new__(cls)

    def __init__(
        self,
        policy: str | type[DDPGPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule,
        buffer_size: int,
        learning_starts: int,
        batch_size: int,
        tau: float,
        gamma: float,
        train_freq: int | tuple[int, str],
        gradient_steps: int,
        action_noise: ActionNoise | None,
        replay_buffer_class: type[ReplayBuffer] | None,
        replay_buffer_kwargs: dict[str, Any] | None,
        optimize_memory_usage: bool,
        n_steps: int,
        speed_mode: bool | str,
        stats_window_size: int,
        tensorboard_log: str | None,
        policy_kwargs: dict[str, Any] | None,
        verbose: int,
        seed: int | None,
        device: th.device | str,
    ):
        super().__init__(
            policy,
            env,
            learning_rate,
            buffer_size,
            learning_starts,
            batch_size,
            tau,
            gamma,
            train_freq,
            gradient_steps,
            action_noise=action_noise,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            optimize_memory_usage=optimize_memory_usage,
            n_steps=n_steps,
            policy_kwargs={**self.policy_kwargs_defaults, **(policy_kwargs or {})},
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            device=device,
            seed=seed,
            sde_support=False,
            supported_action_spaces=None,  # checked below, with a clearer message than SB3's assertion
            support_multi_env=True,
        )
        if getattr(self, "action_space", None) is not None and not isinstance(self.action_space, spaces.Box):
            raise UnsupportedActionSpaceError(
                f"{type(self).__name__} needs a continuous action space (gymnasium.spaces.Box), "
                f"but the environment's action space is {self.action_space}"
            )
        self.speed_mode = speed_mode
        # The diagnostics of the last train() call (see TrainingStats): means over its gradient steps
        self.training_diagnostics: dict[str, float] = {}

    def _say_missing_action_noise(self) -> None:
        """
        At ``verbose >= 1``, say in one line that the model explores without action noise where the zoo entries and
        the TD3 paper add some (SB3's default is none).
        """
        if self.verbose >= 1 and self.action_noise is None:
            name = type(self).__name__
            print(
                f"{name}: no action_noise: after the warm-up of random actions it acts on the actor's output alone, "
                "with no exploration noise (SB3's default; the TD3 paper and the zoo entries add Gaussian noise of std "
                "0.1: "
                f"action_noise=NormalActionNoise(...), or {name}.from_zoo(env_id))"
            )

    def _implied_policy_kwargs(self) -> dict[str, Any]:
        """
        Policy arguments implied by the algorithm's own arguments. They are added when the policy is built and kept
        out of ``policy_kwargs``, which stays what the user gave (and what SB3 saves and compares on load).
        """
        if self.speed_mode_info is None:
            return {}
        # speed_mode: the critic layout it chose (batched: fewer, larger kernels; other random draws than SB3),
        # PyTorch's fused Adam (one kernel per step; other rounding than SB3) and the precision of the hidden layers
        implied: dict[str, Any] = {"batched_critics": self.speed_mode_info.batched_critics, "fused_adam": True}
        if self.speed_mode_info.precision == "bfloat16":
            implied["bfloat16_batch_size"] = self.batch_size
        return implied

    def _setup_model(self) -> None:
        """
        SB3's ``OffPolicyAlgorithm._setup_model`` (learning-rate schedule, seeding, replay buffer, policy, training
        frequency, in its order), with our policy and buffer classes and the implied policy arguments.
        """
        # A checkpoint written by SB3 names SB3's policy class: build ours, which has the same modules
        for name, sb3_policy_class in SB3_TD3_POLICIES.items():
            if self.policy_class is sb3_policy_class:
                self.policy_class = self.policy_aliases[name]
        self._configure_speed_mode()
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        if self.replay_buffer is None:
            self.replay_buffer = self._make_replay_buffer()
        # `policy_kwargs` stay what the user gave (what SB3 saves and compares on load): the implied arguments are
        # added for the building only (a user's value for one of them has been read by then, e.g. batched_critics)
        implied = self._implied_policy_kwargs()
        self.policy_kwargs = {
            key: value for key, value in self.policy_kwargs.items() if key not in self.implied_policy_arguments
        }
        policy_arguments = {**self.policy_kwargs, **implied}
        policy = self.policy_class(self.observation_space, self.action_space, self.lr_schedule, **policy_arguments)
        self.policy = cast("DDPGPolicy", policy.to(self.device))  # one of `policy_aliases`
        self._convert_train_freq()
        self._create_aliases()
        self._configure_lean_collection()

    def _make_replay_buffer(self) -> ReplayBuffer:
        """
        The replay buffer as SB3's ``_setup_model`` makes it (the class chosen from the observations and ``n_steps``
        when none is given), except that SB3's plain ``ReplayBuffer`` is built as our :class:`FastReplayBuffer`:
        the same storage and batches, sampled faster. ``replay_buffer_class`` stays SB3's class.
        """
        if self.n_steps > 1 and self.replay_buffer_class is not None:
            warnings.warn(
                f"`n_steps={self.n_steps}` is ignored because a custom `replay_buffer_class` "
                f"(`{self.replay_buffer_class.__name__}`) was passed: n-step returns are only set up "
                "automatically when `replay_buffer_class` is `None`. "
                "To use n-step returns with a custom replay buffer, configure it explicitly, e.g. "
                f'`replay_buffer_kwargs={{"n_steps": {self.n_steps}, "gamma": {self.gamma}}}`.'
            )
        if self.replay_buffer_class is None:
            if isinstance(self.observation_space, spaces.Dict):
                assert self.n_steps == 1, "N-step returns are not supported for Dict observation spaces yet."
                self.replay_buffer_class = DictReplayBuffer
            elif self.n_steps > 1:
                self.replay_buffer_class = NStepReplayBuffer
                self.replay_buffer_kwargs.update({"n_steps": self.n_steps, "gamma": self.gamma})
            else:
                self.replay_buffer_class = ReplayBuffer
        # (a local copy: the environment that HerReplayBuffer takes is not to be saved with the kwargs)
        replay_buffer_kwargs = self.replay_buffer_kwargs.copy()
        if issubclass(self.replay_buffer_class, HerReplayBuffer):
            assert self.env is not None, "You must pass an environment when using `HerReplayBuffer`"
            replay_buffer_kwargs["env"] = self.env
        buffer_class = FastReplayBuffer if self.replay_buffer_class is ReplayBuffer else self.replay_buffer_class
        return buffer_class(
            self.buffer_size,
            self.observation_space,
            self.action_space,
            device=self.device,
            n_envs=self.n_envs,
            optimize_memory_usage=self.optimize_memory_usage,
            **replay_buffer_kwargs,
        )

    @classmethod
    def from_zoo(
        cls: type[SelfActorCritic],
        env_id: str,
        seed: int | None = None,
        verbose: int = 0,
        device: th.device | str = "auto",
        tensorboard_log: str | None = None,
        conf_file: str | None = None,
        **changes: Any,
    ) -> SelfActorCritic:
        """
        The model that ``sb3-ablation train --algo <algo> --env <env_id> --seed <seed>`` builds: the env's entry in the
        shipped rl-zoo config (``zoo_configs/ablatable_td3.yml`` for AblatableTD3, ``ddpg_scratch.yml`` for DDPG),
        read and preprocessed by rl_zoo3's own ExperimentManager (action noise, ``learning_starts``, ``gamma``,
        ``policy_kwargs``, env wrappers and normalisation), with the entry's ``n_timesteps`` as the budget of
        ``learn()``. With the same seed, ``from_zoo(env_id, seed=s).learn()`` and ``train`` end with the same weights.

        :param env_id: a Gymnasium env id with an entry in the config (or a ``default`` entry)
        :param seed: as ``--seed`` (None: unseeded)
        :param verbose: as ``--verbose``; 0 also hides rl_zoo3's printout of the entry
        :param device: as ``--device``
        :param tensorboard_log: as ``-tb``
        :param conf_file: another zoo config, as ``--conf-file``
        :param changes: hyperparameters that replace the entry's, as ``--hyperparams`` (e.g. ``clipped_double_q=False``,
            ``n_timesteps=5000``, ``learning_starts=500``)
        :raise ValueError: an unknown env or hyperparameter, a value of the wrong type (one line)
        """
        # in the method: sb3_ablation.zoo imports rl_zoo3 (heavy) and the algorithms, which import this module
        from sb3_ablation.zoo.experiment import zoo_model

        return zoo_model(
            cls,
            env_id,
            changes,
            seed=seed,
            verbose=verbose,
            device=device,
            tensorboard_log=tensorboard_log,
            conf_file=conf_file,
        )

    def _budget(self, total_timesteps: int | None) -> tuple[int, str | None]:
        """
        ``total_timesteps`` of ``learn()``, or when it is None the budget of the zoo entry (``from_zoo``'s, else the
        env's ``n_timesteps`` in the shipped zoo config) and the line that says where it came from.

        :raise ValueError: a budget of zero or below
        :raise TypeError: None, and the env has no ``n_timesteps`` there (the message names ``total_timesteps``)
        """
        if total_timesteps is not None:
            if total_timesteps <= 0:
                raise ValueError(f"learn(total_timesteps={total_timesteps}): expected a positive number of timesteps")
            return total_timesteps, None
        if self._zoo_budget is not None:
            budget, source = self._zoo_budget
            return budget, f"learn(): total_timesteps={budget}, {source}"
        budget, env_id = default_budget(self.zoo_config, self.env)
        name = type(self).__name__
        return budget, (
            f"learn(): total_timesteps={budget}, the n_timesteps of {env_id} in zoo_configs/{self.zoo_config}.yml; "
            f"the other settings are this constructor's ({name}.from_zoo({env_id!r}) takes the entry's)"
        )

    def _learn_arguments(
        self,
        total_timesteps: int | None,
        callback: MaybeCallback,
        progress_bar: bool | None,
        reset_num_timesteps: bool = True,
    ) -> tuple[int, MaybeCallback, bool]:
        """
        ``learn()``'s budget (:meth:`_budget`), callbacks and progress bar: without a budget, the zoo entry's
        callbacks (``from_zoo``, when none are given) and a progress bar unless ``progress_bar=False``, with one line
        saying where the budget came from (unless ``verbose=0`` and no bar); with a budget, exactly SB3's (no bar
        unless asked for). A budget that ends within the warm-up is warned about (:meth:`_warn_if_nothing_trained`).
        """
        budget, source = self._budget(total_timesteps)
        self._warn_if_nothing_trained(budget, reset_num_timesteps)
        if total_timesteps is not None:
            return budget, callback, bool(progress_bar)
        if callback is None and self._zoo_callbacks:
            callback = list(self._zoo_callbacks)
        show_bar = progress_bar_available() if progress_bar is None else progress_bar
        if source and (show_bar or self.verbose >= 1):  # said with the progress it belongs to: verbose=0 and no bar is quiet
            print(source)
        return budget, callback, show_bar

    def _budget_step_scale(self) -> int:
        """How many of SB3's steps (``num_timesteps``, ``learning_starts``) one step of ``learn()``'s budget is."""
        return 1

    def _warn_if_nothing_trained(self, budget: int, reset_num_timesteps: bool) -> None:
        """
        Warn, once per model and in one line, when ``learn()`` would end within the warm-up (at or before
        ``learning_starts``): SB3 collects random transitions and makes no gradient update. A warning, not a refusal
        as ``sb3-ablation train`` gives: SB3's own tests collect such warm-up data on purpose (``learn(10)`` with
        ``learning_starts=100``).

        :param budget: ``learn()``'s budget
        :param reset_num_timesteps: ``learn()``'s: False continues from the model's ``num_timesteps``
        """
        end = budget * self._budget_step_scale() + (0 if reset_num_timesteps else self.num_timesteps)
        if end > self.learning_starts or self in WARNED_NOTHING_TRAINED:
            return
        WARNED_NOTHING_TRAINED.add(self)  # once per model (not an attribute: SB3's file stays SB3's)
        warm_up = self.learning_starts // self._budget_step_scale()
        warnings.warn(
            f"learn(total_timesteps={budget}) trains nothing: it ends at or before learning_starts ({warm_up}), "
            f"the warm-up of random actions, so no gradient update is made; give a budget above {warm_up} or a lower "
            "learning_starts (e.g. from_zoo(env_id, learning_starts=...))",
            UserWarning,
            stacklevel=user_stacklevel(),
        )

    def _create_aliases(self) -> None:
        self.actor = self.policy.actor
        self.actor_target = self.policy.actor_target
        self.critic = self.policy.critic
        self.critic_target = self.policy.critic_target
        # the leaves of the actor update's backward pass, listed once (a module traversal per train() call costs more
        # than a small network's kernels); the parameters keep their identity through load, set_parameters and .to()
        self._actor_parameters = list(self.actor.parameters())

    def _record_training_stats(self, stats: TrainingStats) -> None:
        """Keep the diagnostics of one ``train()`` call in ``training_diagnostics``; log them with the losses."""
        self.training_diagnostics = stats.diagnostics()
        log_training(self.logger, self._n_updates, stats.losses(), self.training_diagnostics)

    def _excluded_save_params(self) -> list[str]:
        # What the speed mode and lean collection derive from the hardware and the spaces is derived again at load
        derived = ["speed_mode_info", "_lean_observations", "_actor_parameters", "training_diagnostics"]
        derived += ["_zoo_budget", "_zoo_callbacks"]  # from_zoo's, for learn() without a budget
        return [*super()._excluded_save_params(), "actor", "critic", "actor_target", "critic_target", *derived]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        return ["policy", "actor.optimizer", "critic.optimizer"], []

    def _sb3_policy_class(self) -> type[BasePolicy] | None:
        """SB3's TD3 policy class that builds exactly this model's policy, or None where SB3 has no equivalent."""
        if self.speed_mode or not set(self.policy_kwargs) <= SB3_POLICY_ARGUMENTS:
            return None
        names = [name for name, policy_class in self.policy_aliases.items() if self.policy_class is policy_class]
        return SB3_TD3_POLICIES[names[0]] if names else None

    def save(
        self,
        path: str | pathlib.Path | io.BufferedIOBase,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """
        Save the model in SB3's format. Where SB3 can represent the model (not in speed mode, and see
        :meth:`_sb3_policy_class`) the file names SB3's policy class, so SB3's ``TD3``/``DDPG`` (and tools without
        this package) load it; the optimizer states are in PyTorch's per-parameter layout either way.
        Parameters as SB3's ``save``.
        """
        # SB3's BaseAlgorithm.save step for step (the attributes less the excluded ones and the torch objects, then
        # the parameters), with SB3's policy class in the saved attributes: SB3's save has no hook for the saved
        # value of one attribute, and the model's own `policy_class` stays ours
        excluded = set(exclude or ()) | set(self._excluded_save_params())
        excluded -= set(include or ())
        state_dict_names, torch_variable_names = self._get_torch_save_params()
        excluded |= {name.split(".")[0] for name in state_dict_names + torch_variable_names}
        data = {name: value for name, value in vars(self).items() if name not in excluded}
        sb3_policy_class = self._sb3_policy_class()
        if sb3_policy_class is not None and "policy_class" in data:
            data["policy_class"] = sb3_policy_class
        pytorch_variables = {name: recursive_getattr(self, name) for name in torch_variable_names}
        save_to_zip_file(path, data=data, params=self.get_parameters(), pytorch_variables=pytorch_variables)

    @classmethod
    def load(
        cls: type[SelfActorCritic],
        path: str | pathlib.Path | io.BufferedIOBase,
        env: GymEnv | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfActorCritic:
        """
        SB3's ``load``, for files written by this package or by SB3's TD3/DDPG, with SB3's keywords.

        A missing file raises ``FileNotFoundError`` naming it; a model of another algorithm (say PPO's, or SB3's TD3
        for DDPG) raises :class:`~sb3_ablation.common.saved_models.IncompatibleModelError` (a ``ValueError``) saying
        what the file holds and what loads it; a file that is not a saved model, ``ValueError``.

        Keyword arguments change the loaded model as in SB3, except: ``policy_kwargs`` that build the same policy as
        the saved ones are accepted (those given at creation), other ones are refused; ``speed_mode`` cannot be
        switched on or off (a speed-mode model may be given another precision, ``"bfloat16"`` or ``"float32"``);
        subclasses check their own arguments (:meth:`_check_load_kwargs`).
        """
        data = read_saved_data(path, custom_objects)
        cls._check_saved_model(data, path)
        kwargs = cls._check_load_kwargs(data, dict(kwargs))
        return super().load(
            path,
            env=env,
            device=device,
            custom_objects=custom_objects,
            print_system_info=print_system_info,
            force_reset=force_reset,
            **kwargs,
        )

    @classmethod
    def _check_load_kwargs(cls, data: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """
        The keyword arguments of :meth:`load` that SB3's ``load`` should write into the model; raise on a change
        that cannot be applied to the saved model.

        :param data: the saved attributes of the model
        :param kwargs: the keyword arguments given to ``load``
        """
        saved_speed_mode = data.get("speed_mode", False)
        if "speed_mode" in kwargs and bool(kwargs["speed_mode"]) != bool(saved_speed_mode):
            raise ValueError(
                f"speed_mode={kwargs['speed_mode']!r} differs from the saved model's ({saved_speed_mode!r}): its "
                "critics and optimizer states are stored for the other mode"
            )
        if "policy_kwargs" in kwargs:
            saved = {key: value for key, value in data.get("policy_kwargs", {}).items() if key != "device"}
            given = kwargs.pop("policy_kwargs") or {}
            if cls._comparable_policy_kwargs(given, data) != cls._comparable_policy_kwargs(saved, data):
                raise ValueError(
                    f"policy_kwargs={given} build another policy than the saved policy_kwargs={saved}; "
                    "a loaded model keeps its networks"
                )
        return kwargs

    @classmethod
    def check_saved_model(
        cls, path: str | pathlib.Path | io.BufferedIOBase, custom_objects: dict[str, Any] | None = None
    ) -> None:
        """
        Check, without loading it, that :meth:`load` takes the model in ``path``.

        :raise FileNotFoundError: no such file (SB3 also tries ``path`` + ``.zip``)
        :raise IncompatibleModelError: a model of another algorithm (the message says which, and what loads it)
        :raise ValueError: not a saved model
        """
        cls._check_saved_model(read_saved_data(path, custom_objects), path)

    @classmethod
    def _check_saved_model(cls, data: dict[str, Any], path: Any) -> None:
        """Refuse, in one line, a model that another algorithm saved (its networks and training differ)."""
        check_saved_algorithm(data, path, cls.__name__, cls.loadable_algorithms)

    @classmethod
    def _comparable_policy_kwargs(cls, policy_kwargs: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """``policy_kwargs`` as they build the policy: with the defaults, without what the saved model implies."""
        comparable = {**cls.policy_kwargs_defaults, **policy_kwargs}
        return {key: value for key, value in comparable.items() if key not in cls.implied_policy_arguments}

    def set_parameters(
        self,
        load_path_or_dict: str | pathlib.Path | io.BufferedIOBase | dict[str, Any],
        exact_match: bool = True,
        device: th.device | str = "auto",
    ) -> None:
        """
        SB3's ``set_parameters`` (parameters in SB3's layout or ours); if loading fails part way, the model keeps
        the parameters it had. Parameters as SB3's.
        """
        previous = copy.deepcopy(self.get_parameters())
        try:
            # SB3 types the argument as a path or a dict but reads file objects too (load_from_zip_file)
            super().set_parameters(load_path_or_dict, exact_match=exact_match, device=device)  # type: ignore[arg-type]
        except Exception:
            # (SB3 types the dict as tensors; it takes what get_parameters returns, state dicts per module)
            super().set_parameters(previous, exact_match=True, device=device)  # type: ignore[arg-type]
            raise

    def save_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase) -> None:
        """Save the replay buffer, as SB3's ``ReplayBuffer`` where it is our faster one (the same storage)."""
        buffer = self.replay_buffer
        if type(buffer) is FastReplayBuffer:
            buffer = sharing_storage(buffer, ReplayBuffer)  # so that SB3 (and tools without this package) read the file
        save_to_pkl(path, buffer, self.verbose)

    def load_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """SB3's ``load_replay_buffer``; SB3's plain ``ReplayBuffer`` is sampled by our faster one (same storage)."""
        fast = type(self.replay_buffer) is FastReplayBuffer
        super().load_replay_buffer(path, truncate_last_traj=truncate_last_traj)
        if fast and type(self.replay_buffer) is ReplayBuffer:
            self.replay_buffer = sharing_storage(self.replay_buffer, FastReplayBuffer)


def read_saved_data(path: str | pathlib.Path | io.BufferedIOBase, custom_objects: dict[str, Any] | None = None) -> dict:
    """
    The saved attributes (``data``) of an SB3 model file, read without its parameters.

    :raise FileNotFoundError: neither ``path`` nor ``path`` + ``.zip`` (which SB3's load tries next) is a file
    :raise ValueError: the file is not a saved model
    """
    if isinstance(path, (str, os.PathLike)) and not os.path.isfile(path) and not os.path.isfile(f"{path}.zip"):
        also = "" if str(path).endswith(".zip") else f" (nor {path}.zip)"
        raise FileNotFoundError(f"no saved model at {path}: no such file{also}")
    file = open_path(path, "r", suffix="zip")
    position = file.tell()
    try:
        with zipfile.ZipFile(file) as archive:
            if "data" not in archive.namelist():
                raise ValueError(f"{path} is not a saved model: it has no 'data' entry")
            return json_to_data(archive.read("data").decode(), custom_objects=custom_objects)
    except zipfile.BadZipFile as error:
        raise ValueError(f"{path} is not a saved model (not a zip file)") from error
    finally:
        if isinstance(path, io.BufferedIOBase):
            file.seek(position)  # SB3 reads the same file-like object next
        else:
            file.close()
