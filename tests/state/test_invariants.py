"""Random request histories against one group (Hypothesis RuleBasedStateMachine).

A small client model remembers the member ids, generations and leader member lists the coordinator handed
out, so most requests are valid, while some use stale or invented ids and generations on purpose.

At the end of every history the run is ended as an engine ends it and its rows must pass the protocol
invariants `coordsim validate` checks (simulations/validation/invariants.py, the one implementation: legal,
chained transitions; generations that only grow within a life of the group, a reload resuming at the last
persisted generation; one owner per partition; Stable holding the stored assignment; accepted commits only
from the current generation or standalone to an Empty group). After every step, what the rows cannot show:

* the group in memory is in the state and generation of its last `group_states` row;
* in Stable every member's assignment is the one stored for the current generation;
* replaying the `members` rows since the group last went Dead (the unload's own removals aside), as
  `coordsim describe` does, gives the coordinator's member map in its iteration order;
* an OffsetCommit writes `offsets` rows exactly when it is accepted, never while the group loads, with the
  request's generation and member id, and with a generation only from a member;
* every request is answered at most once; no exception escapes.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from simulations.validation.invariants import FLEET_INVARIANTS, INVARIANTS, Invariants
from simulations.validation.raw_tables import rows_frame
from state.events import INJECTABLE_WRITE_ERRORS
from tableio.coordinator_load import TABLE as LOAD_TABLE, coordinator_load_rows
from state.classic.group_state import GroupState
from state.java_compat import JavaHashMap
from tests.state.conftest import make_ctx

INSTANCES = ("instance-a", "instance-b", "instance-c")
PROTOCOL_CHOICES = (("range",), ("roundrobin",), ("range", "roundrobin"), ("roundrobin", "range"))
TOPIC_CHOICES = (("foo",), ("foo", "bar"))
SESSIONS = (1000, 5000, 30_000)
REBALANCES = (500, 5000, 20_000)
SLEEPS = (0, 1, 100, 1000, 2999, 3000, 5000, 10_000, 31_000, 61_000, 400_000)
PARTITIONS = 6


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ctx = make_ctx(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
        self.members: dict[str, dict] = {}      # member id -> {"instance", "generation", "leader_members"}
        self.pending: list[str] = []            # ids handed out with MEMBER_ID_REQUIRED
        self.seen = {"responses": 0, "offsets": 0, "members": 0, "group_states": 0}
        self.member_map: JavaHashMap = JavaHashMap()  # the members rows replayed
        self.answered: set[str] = set()
        self.commit_context = None
        self.join_params: dict[str, dict] = {}        # request id -> what that JoinGroup asked for
        self.member_params: dict[str, dict] = {}      # member id -> its last JoinGroup parameters

    # -- client model ----------------------------------------------------------------------------------------
    def pick(self, choices, index):
        return choices[index % len(choices)] if choices else None

    def member_choices(self) -> list[str]:
        return list(self.members) + self.pending

    def learn(self) -> None:
        """Read the new responses like clients would."""
        rows = self.ctx.rows("responses")
        for row in rows[self.seen["responses"]:]:
            assert row["request_id"] not in self.answered, f"request {row['request_id']} answered twice"
            self.answered.add(row["request_id"])
            if row["api"] != "JoinGroup":
                continue
            if row["error"] in ("MEMBER_ID_REQUIRED", "NONE"):
                self.member_params[row["member_id"]] = self.join_params[row["request_id"]]
            if row["error"] == "MEMBER_ID_REQUIRED":
                self.pending.append(row["member_id"])
            elif row["error"] == "NONE":
                self.members[row["member_id"]] = {
                    "instance": row["group_instance_id"], "generation": row["generation_id"],
                    "leader_members": [m["member_id"] for m in row["members"] or []]}
        self.seen["responses"] = len(rows)

    def send_join(self, member_id, instance, version, names, topics, session, rebalance):
        params = dict(names=names, topics=topics, session_ms=session, rebalance_ms=rebalance)
        handle = self.ctx.join(member_id=member_id, instance_id=instance, version=version, **params)
        self.join_params[handle.request_id] = params
        return handle

    # -- rules -----------------------------------------------------------------------------------------------
    @rule(version=st.integers(0, 9), names=st.sampled_from(PROTOCOL_CHOICES),
          topics=st.sampled_from(TOPIC_CHOICES), session=st.sampled_from(SESSIONS),
          rebalance=st.sampled_from(REBALANCES), instance=st.none() | st.sampled_from(INSTANCES))
    def join_new(self, version, names, topics, session, rebalance, instance):
        self.send_join("", instance, version, names, topics, session, rebalance)

    @precondition(lambda self: self.member_choices())
    @rule(index=st.integers(0, 100), names=st.sampled_from(PROTOCOL_CHOICES),
          topics=st.sampled_from(TOPIC_CHOICES), session=st.sampled_from(SESSIONS),
          rebalance=st.sampled_from(REBALANCES), version=st.integers(4, 9), with_instance=st.booleans())
    def join_known(self, index, names, topics, session, rebalance, version, with_instance):
        member_id = self.pick(self.member_choices(), index)
        instance = self.members.get(member_id, {}).get("instance") if with_instance else None
        self.send_join(member_id, instance, version, names, topics, session, rebalance)

    @precondition(lambda self: self.members)
    @rule(index=st.integers(0, 100), generation=st.sampled_from(["mine", "group", "stale", "random"]),
          extra=st.booleans())
    def sync(self, index, generation, extra):
        member_id = self.pick(list(self.members), index)
        self.send_sync(member_id, self.generation_choice(self.members[member_id], generation), extra)

    def send_sync(self, member_id, generation, extra=False):
        model = self.members[member_id]
        assignments = {}
        if model["leader_members"]:
            for p in range(PARTITIONS):
                owner = model["leader_members"][p % len(model["leader_members"])]
                assignments.setdefault(owner, [("foo", [])])[0][1].append(p)
            if extra:
                assignments["not-a-member"] = [("bar", [0])]
        return self.ctx.sync(member_id, generation, assignments=assignments, instance_id=model["instance"])

    @precondition(lambda self: self.member_choices())
    @rule()
    def cooperate_again(self):
        self.cooperate()

    @precondition(lambda self: self.member_choices())
    @rule()
    def cooperate(self):
        """Well-behaved clients: everyone known rejoins with its last parameters, waits for the join phase
        (following the join timer), then the leader and the followers sync."""
        joins = []
        for member_id in self.member_choices():
            params = self.member_params.get(member_id)
            if params is None:
                continue
            instance = self.members.get(member_id, {}).get("instance")
            joins.append(self.send_join(member_id, instance, 9, params["names"], params["topics"],
                                        params["session_ms"], params["rebalance_ms"]))
        for _ in range(4):
            deadline = self.ctx.timer_deadline("join")
            if all(j.done for j in joins) or deadline is None:
                break
            self.ctx.sleep(max(0, deadline - self.ctx.time))
        self.learn()
        done = [j for j in joins if j.done and j.error == "NONE"]
        for j in sorted(done, key=lambda j: j.leader_id != j.member_id):
            self.send_sync(j.member_id, j.generation_id)

    @precondition(lambda self: self.member_choices())
    @rule(index=st.integers(0, 100), generation=st.sampled_from(["mine", "group", "stale", "random"]))
    def heartbeat(self, index, generation):
        member_id = self.pick(self.member_choices(), index)
        model = self.members.get(member_id, {"instance": None, "generation": -1})
        self.ctx.heartbeat(member_id, self.generation_choice(model, generation), instance_id=model["instance"])

    @rule(indexes=st.lists(st.integers(0, 100), min_size=1, max_size=3), by_instance=st.booleans(),
          version=st.integers(0, 5))
    def leave(self, indexes, by_instance, version):
        choices = self.member_choices() or ["unknown-member"]
        identities = []
        for i in indexes if version >= 3 else indexes[:1]:
            member_id = self.pick(choices, i)
            instance = self.members.get(member_id, {}).get("instance")
            if by_instance and version >= 3:
                identities.append(("", instance or self.pick(INSTANCES, i)))
            else:
                identities.append(member_id if instance is None else (member_id, instance))
        self.ctx.leave(*identities, version=version)

    @rule(index=st.integers(0, 100), generation=st.sampled_from(["mine", "group", "stale", "random", "none"]),
          anonymous=st.booleans(), version=st.integers(1, 9), partitions=st.sets(st.integers(0, 3), min_size=1),
          topic=st.sampled_from(["foo", "bar"]))
    def commit(self, index, generation, anonymous, version, partitions, topic):
        member_id = "" if anonymous else (self.pick(list(self.members), index) or "")
        model = self.members.get(member_id, {"instance": None, "generation": -1})
        gen = -1 if generation == "none" else self.generation_choice(model, generation)
        self.ctx._run()  # fire what is due at this instant, so the snapshot is what the commit will see
        group = self.ctx.group
        self.commit_context = (gen, member_id, group is not None and group.has_member(member_id),
                               self.ctx.runtime.loading_until is not None)
        instance = model["instance"] if version >= 7 else None
        handle = self.ctx.commit({(topic, p): 100 + p for p in sorted(partitions)}, member_id=member_id,
                                 generation_id=gen, instance_id=instance, version=version)
        self.commit_context += (handle,)

    @rule(all_partitions=st.booleans())
    def fetch(self, all_partitions):
        self.ctx.fetch(None if all_partitions else {"foo": [0, 1], "bar": [0]})

    @rule(ms=st.sampled_from(SLEEPS))
    def sleep(self, ms):
        self.ctx.sleep(ms)

    @rule(error=st.sampled_from(INJECTABLE_WRITE_ERRORS), count=st.integers(1, 2))
    def write_failure(self, error, count):
        self.ctx.fault(fault="write_failure", error=error, count=count)

    @rule(delay=st.sampled_from([0, 10, 2000]))
    def move(self, delay):
        self.ctx.fault(fault="move", load_delay_ms=delay)

    def generation_choice(self, model, kind) -> int:
        group = self.ctx.group
        if kind == "mine":
            return model["generation"]
        if kind == "group":
            return -1 if group is None else group.generation_id
        if kind == "stale":
            return (-1 if group is None else group.generation_id) - 1
        return 7

    # -- invariants ------------------------------------------------------------------------------------------
    @invariant()
    def check(self) -> None:
        self.learn()
        self.check_state()
        self.check_stable_assignment()
        self.check_commits()
        self.check_member_map()
        event(f"state: {self.ctx.state}")

    def teardown(self) -> None:
        self.ctx.finish()
        invariants = Invariants()
        written = {table: self.ctx.written(table) for table in
                   {name for _, needs, *_ in INVARIANTS + FLEET_INVARIANTS for name in needs} - {LOAD_TABLE}}
        # What the engines derive once a run has ended, from the rows it wrote.
        written[LOAD_TABLE] = coordinator_load_rows(written, self.ctx.time)
        invariants.add({table: rows_frame(table, rows) for table, rows in written.items()})
        failures = [f"{check.name}: {check.detail}" for check in invariants.checks() if not check.passed]
        assert not failures, failures

    def check_state(self) -> None:
        states = self.ctx.rows("group_states")
        group = self.ctx.group
        if group is None:
            assert not states or states[-1]["to_state"] == GroupState.DEAD.value, states[-1:]
        else:
            assert (group.state.value, group.generation_id) == (states[-1]["to_state"], states[-1]["generation_id"])

    def check_member_map(self) -> None:
        new = []
        for table in ("members", "group_states"):
            rows = self.ctx.rows(table)
            new += [(row["out_seq"], table, row) for row in rows[self.seen[table]:]]
            self.seen[table] = len(rows)
        for _, table, row in sorted(new, key=lambda item: item[0]):
            if table == "group_states":
                if row["to_state"] == GroupState.DEAD.value:
                    self.member_map = JavaHashMap()
            elif row["cause"] == "coordinator_unload":
                continue
            elif row["change"] == "added":
                self.member_map[row["member_id"]] = None
            else:
                del self.member_map[row["member_id"]]
        assert self.member_map.keys() == self.ctx.member_ids

    def check_stable_assignment(self) -> None:
        group = self.ctx.group
        if group is None or group.state != GroupState.STABLE:
            return
        record = next(r for r in reversed(self.ctx.rows("group_metadata")) if not r["tombstone"])
        assert record["generation_id"] == group.generation_id
        stored = {m["member_id"]: m["assignment"] for m in record["members"]}
        assert set(stored) == set(group.members.keys())
        for member in group.all_members():
            assert stored[member.member_id] == member.assignment

    def check_commits(self) -> None:
        rows = self.ctx.rows("offsets")
        new_rows = [r for r in rows[self.seen["offsets"]:] if r["offset"] is not None]
        self.seen["offsets"] = len(rows)
        context, self.commit_context = self.commit_context, None
        if context is None:
            assert not new_rows, "offsets were written without a commit"
            return
        gen, member_id, is_member, loading, handle = context
        accepted = handle.done and any(r["error"] == "NONE" for r in handle.results or [])
        assert accepted == bool(new_rows), (handle.response, new_rows)
        if not accepted:
            return
        event("commit accepted")
        assert not loading
        assert gen < 0 or is_member, context
        for row in new_rows:
            assert row["generation_id"] == gen and row["member_id"] == member_id


TestCoordinatorInvariants = CoordinatorMachine.TestCase
TestCoordinatorInvariants.settings = settings(max_examples=250, stateful_step_count=50, deadline=None,
                                              suppress_health_check=[HealthCheck.too_slow])
