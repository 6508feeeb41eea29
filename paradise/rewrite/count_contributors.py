"""Rule: every value an answer releases is counted in distinct contributors, inside the database.

A *contributor* is a data subject (the table's ``subject_key``) or, where a table declares
none, a distinct row of the stored table. The anonymized relation of every *guarded*
table (one whose policy sets ``k`` > 1, a minimum cell size, or ``l``) carries a
contributor key (``_paradise_c``) that no user expression can name. This rule carries the
keys — and, for answers that release rows, the quasi-identifiers the query touches — from
every reference through derived tables, CTEs and ``UNION ALL`` branches as hidden columns
(``_paradise_h<i>``; stars were expanded before, so they never reach a user's column
list) up to the block where they are counted:

* a **grouping block** (``GROUP BY``, aggregates; ``DISTINCT`` and ``UNION`` were turned
  into grouping by :mod:`paradise.rewrite.group_distinct`) counts ``COUNT(DISTINCT key)``
  per group and guarded reference. Inside the query it keeps only groups with enough
  contributors (``HAVING``), so nothing computed from a small group reaches anything
  else; as the released root it hands its counts to verification (``_paradise_g<i>``);
* an **expression subquery** (``IN``, ``EXISTS``, scalar) that returns rows keeps only rows
  whose class — over the quasi-identifiers it touches — has enough contributors;
* the **released rows** get, per guarded reference and linkable unit, the number of
  distinct contributors of their class and the diversity of every sensitive output column
  in it (:func:`row_figures`, window functions over the touched quasi-identifiers).

A row duplicated by the query (a table unioned with itself, a join that repeats a row)
repeats its key and adds nothing to a count. Constructs through which keys cannot be
carried — ``INTERSECT``, ``EXCEPT``, window functions over rows, a correlated or ordered
row subquery — are refused for guarded tables. Tables whose policy says
``on_violation: report`` are counted and reported, never filtered.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp

from paradise.anonymize.contributor import CONTRIBUTOR
from paradise.anonymize.dialects import random_order
from paradise.errors import UnsupportedQueryError
from paradise.policy.model import OnViolation
from paradise.rewrite.analyze import Block, QueryModel, Ref, passes_rows

__all__ = [
    "CONTRIBUTOR",
    "Figures",
    "Guard",
    "RootCount",
    "Slot",
    "Stat",
    "count_contributors",
    "row_figures",
]

@dataclass(frozen=True)
class Guard:
    """What a guarded table demands of every released value.

    Attributes:
        table: the canonical table name.
        threshold: the fewest contributors a released value may come from (k, or the
            minimum cell size if larger).
        l: distinct l-diversity of sensitive values (None: not required).
        action: what happens to a value below the threshold or diversity.
        quasi_identifiers: the table's quasi-identifier columns.
        sensitive: the table's sensitive columns.
        units: column sets that stay linked row by row (slicing groups; else one).
        unique_rows: the key is a row identity (no subject key): a relation's rows are
            distinct contributors unless the query repeats them.
    """

    table: str
    threshold: int
    l: int | None  # noqa: E741
    action: OnViolation
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    units: tuple[tuple[str, ...], ...] = ()
    unique_rows: bool = True

    @property
    def enforced(self) -> bool:
        """Whether values below the threshold are withheld or refused (not only reported)."""
        return self.action is not OnViolation.REPORT


@dataclass(frozen=True)
class Slot:
    """A hidden column carried through the query: a reference's key, or a touched column."""

    table: str
    occ: int
    column: str | None = None  # None: the contributor key


@dataclass(frozen=True)
class Stat:
    """A hidden trailing column of the released answer that verification reads.

    Attributes:
        kind: ``contributors`` (distinct contributors of the row's class, or of the
            group; 0 for a group the reference does not reach), ``diversity`` (distinct
            values in the class or group) or ``all_ok`` (1 if every group of the answer
            meets every refusing threshold).
        guard: the table whose policy the figure is checked against.
        columns: the columns that form the class (empty: the group, or the whole answer).
        output: for a row ``diversity``, the output column whose values are counted.
    """

    kind: Literal["contributors", "diversity", "all_ok"]
    guard: Guard | None
    columns: tuple[str, ...] = ()
    output: int | None = None


@dataclass
class Figures:
    """Window figures over released rows: ranks first, then windows over the ranks."""

    ranks: list[tuple[str, exp.Expr]] = field(default_factory=list)
    windows: list[tuple[str, exp.Expr]] = field(default_factory=list)
    suppress: list[exp.Expr] = field(default_factory=list)
    stats: list[Stat] = field(default_factory=list)


@dataclass
class RootCount:
    """What the released block carries for verification.

    Attributes:
        grouped: the root releases groups (its stats are ``_paradise_g<i>`` columns it
            projects itself); otherwise it releases rows and ``slots`` are its hidden
            columns, from which :func:`row_figures` computes the class figures.
        stats: for a grouped root, one per ``_paradise_g<i>`` column, in order.
        slots: for a row root, the hidden columns (slot -> column name).
    """

    grouped: bool
    stats: list[Stat] = field(default_factory=list)
    slots: dict[Slot, str] = field(default_factory=dict)
    unique: dict[tuple[str, int], bool] = field(default_factory=dict)


@dataclass
class _Carry:
    slots: list[Slot]
    exprs: dict[Slot, exp.Expr]
    unique: dict[tuple[str, int], bool]


def count_contributors(
    model: QueryModel, guards: dict[str, Guard], dialect: str, *, totals: bool = False
) -> RootCount | None:
    """Carry contributor keys, protect inner blocks, and count at the root (in place).

    With ``totals`` (a ``ROLLUP`` answer that goes through hierarchical cell
    suppression) the root's groups are counted but never filtered: the cell suppression
    withholds them. Returns None when no guarded table's rows reach the released answer.
    """
    if not any(ref.table in guards for ref in model.refs):
        return None
    return _Counter(model, guards, dialect, totals).run()


class _Counter:
    def __init__(
        self, model: QueryModel, guards: dict[str, Guard], dialect: str, totals: bool
    ) -> None:
        self.totals = totals
        self.model = model
        self.guards = guards
        self.dialect = dialect
        self.carry: dict[int, _Carry] = {}
        self.row_sink_below: dict[int, bool] = {}
        self.hidden: dict[int, dict[Slot, str]] = {}
        self.consumed: list[Block] = []
        self.needed_keys: set[str] = set()

    def run(self) -> RootCount | None:
        model = self.model
        for block in reversed(model.blocks):  # outer blocks first
            self.row_sink_below[id(block)] = self._feeds_row_sink(block)
        for block in model.blocks:  # inner blocks first
            self._check_block(block)
            self.carry[id(block)] = self._slots(block)
        self.needed_keys = self._needed_keys()
        for block in self.consumed:
            self._emit(block, self.carry[id(block)].slots)
        for block in model.blocks:
            if block.use == "expression" and self._passes_rows(block):
                self._protect_rows(block)
            elif (
                block.kind == "select"
                and block.aggregate
                and block.use != "root"
                and not self._released_branch(block)
            ):
                self._protect_groups(block)
        return self._root()

    # --- the flow of rows -------------------------------------------------------------
    def _passes_rows(self, block: Block) -> bool:
        return passes_rows(block)

    def _released_branch(self, block: Block) -> bool:
        """A branch (at any depth) of the released UNION ALL."""
        while block.use == "branch" and block.consumers:
            block = block.consumers[0][0]
        return block.use == "root" and block.kind == "union_all"

    def _feeds_row_sink(self, block: Block) -> bool:
        """Whether rows of ``block`` reach a block that forms classes over touched columns."""
        if not self._passes_rows(block):
            return False
        if block.use in ("root", "expression"):
            return True
        return any(self.row_sink_below.get(id(c), False) for c, _alias in block.consumers)

    def _slots(self, block: Block) -> _Carry:
        if block.kind != "select":
            slots: list[Slot] = []
            for branch in block.branches:
                for slot in self.carry[id(branch)].slots:
                    if slot not in slots:
                        slots.append(slot)
            return _Carry(slots, {}, {(s.table, s.occ): False for s in slots})
        columns = self.row_sink_below[id(block)]
        slots, exprs = [], {}
        unique: dict[tuple[str, int], bool] = {}
        taken: dict[str, int] = {}
        sources: list[tuple[str, Ref | Block]] = [*block.refs.items(), *block.children.items()]
        single = len(sources) == 1
        for alias, source in sources:
            if isinstance(source, Ref):
                guard = self.guards.get(source.table)
                if guard is None:
                    continue
                own = [Slot(source.table, 0)]
                if columns:
                    touched = self.model.touched.get(source, set())
                    own += [
                        Slot(source.table, 0, c) for c in guard.quasi_identifiers if c in touched
                    ]
                carried = {
                    s: _col(CONTRIBUTOR if s.column is None else s.column, alias) for s in own
                }
                own_unique = {(source.table, 0): guard.unique_rows}
            else:
                if not self._passes_rows(source) or not self.carry[id(source)].slots:
                    continue
                names = _hidden_names(self.carry[id(source)].slots)
                if source not in self.consumed:
                    self.consumed.append(source)
                own = [s for s in self.carry[id(source)].slots if columns or s.column is None]
                carried = {s: _col(names[s], alias) for s in own}
                own_unique = dict(self.carry[id(source)].unique)
            renumber: dict[tuple[str, int], int] = {}
            for slot in own:
                key = (slot.table, slot.occ)
                if key not in renumber:
                    renumber[key] = taken.get(slot.table, 0)
                    taken[slot.table] = renumber[key] + 1
                new = Slot(slot.table, renumber[key], slot.column)
                slots.append(new)
                exprs[new] = carried[slot]
                unique[(new.table, new.occ)] = single and own_unique.get(key, False)
        return _Carry(slots, exprs, unique)

    def _emit(self, block: Block, order: Sequence[Slot]) -> dict[Slot, str]:
        """Append ``order``'s hidden columns to ``block``'s projection (NULL where absent)."""
        done = self.hidden.get(id(block))
        if done is not None:
            if list(done) != list(order):
                raise UnsupportedQueryError(
                    "a subquery is read by set operations of different shapes",
                    hint="simplify the query",
                )
            return done
        names = _hidden_names(order)
        self.hidden[id(block)] = names
        if block.kind != "select":
            for branch in block.branches:
                self._emit(branch, order)
            return names
        select = block.node
        assert isinstance(select, exp.Select)
        carry = self.carry[id(block)]
        for slot in order:
            if slot.column is None and slot.table not in self.needed_keys:
                continue  # counted as rows: the key is never read
            value = carry.exprs.get(slot)
            select.select(
                exp.alias_(
                    value.copy() if value is not None else exp.Null(), names[slot], quoted=True
                ),
                append=True,
                copy=False,
            )
        return names

    def _read_slots(self, names: dict[Slot, str]) -> dict[Slot, str]:
        """The emitted hidden columns (keys only of tables whose counts read them)."""
        keep = self.needed_keys
        return {s: n for s, n in names.items() if s.column is not None or s.table in keep}

    def _needed_keys(self) -> set[str]:
        """Tables whose keys some count reads (elsewhere rows are counted: ``COUNT(*)``)."""
        needed: set[str] = set()
        for block in self.model.blocks:
            counting = (block.kind == "select" and block.aggregate) or (
                self._passes_rows(block) and block.use in ("root", "expression")
            )
            if not counting:
                continue
            part = self.carry[id(block)]
            keys = [s for s in part.slots if s.column is None]
            if len(keys) == 1 and part.unique.get((keys[0].table, keys[0].occ)):
                continue
            needed |= {s.table for s in keys}
        return needed

    # --- constructs through which keys cannot be carried -------------------------------
    def _source_guards(self, block: Block) -> list[Guard]:
        tables = {ref.table for ref in block.refs.values() if ref.table in self.guards}
        for child in [*block.children.values(), *block.branches]:
            part = self.carry.get(id(child))
            if part is not None:
                tables |= {s.table for s in part.slots}
        return [self.guards[t] for t in sorted(tables)]

    def _check_block(self, block: Block) -> None:
        guards = self._source_guards(block)
        if not guards:
            return
        names = ", ".join(g.table for g in guards)
        rule = f"tables {names}: privacy (every released value counts its contributors)"
        if block.kind in ("intersect", "except", "union"):
            what = "UNION (without ALL)" if block.kind == "union" else block.kind.upper()
            raise UnsupportedQueryError(
                f"{what} over a protected table cannot count contributors",
                policy_rule=rule,
                hint="use UNION ALL, IN / NOT IN subqueries or a join instead",
            )
        if not any(g.enforced for g in guards):
            return
        if block.kind == "select" and not block.aggregate and block.windows:
            raise UnsupportedQueryError(
                "window functions over the rows of a protected table compute values from "
                "other people's rows",
                policy_rule=rule,
                hint="aggregate with GROUP BY first; windows over the groups are allowed",
            )
        if block.use == "expression" and self._passes_rows(block):
            node = block.node
            if block.correlated:
                raise UnsupportedQueryError(
                    "a correlated subquery that returns rows of a protected table",
                    policy_rule=rule,
                    hint="join the table instead, or aggregate inside the subquery",
                )
            if any(node.args.get(k) for k in ("limit", "offset", "order")):
                raise UnsupportedQueryError(
                    "ORDER BY or LIMIT inside a subquery over a protected table picks rows",
                    policy_rule=rule,
                    hint="use an aggregate (MIN, MAX) instead",
                )
        if block.kind == "select" and block.aggregate:
            self._check_labels(block, [g for g in guards if g.enforced])

    def _check_labels(self, block: Block, guards: list[Guard]) -> None:
        """Groups labelled by sensitive values can be checked for l only where released."""
        diverse = {g.table: g for g in guards if g.l is not None}
        if not diverse:
            return
        assert isinstance(block.node, exp.Select)
        inner = block.use != "root" and not self._released_branch(block)
        for proj in block.node.selects:
            if proj.find(exp.AggFunc) is not None:
                continue
            for ref, col in self.model.lineage.expression(proj).sources:
                guard = diverse.get(ref.table)
                if guard is None or col not in guard.sensitive:
                    continue
                if inner:
                    raise UnsupportedQueryError(
                        f'a subquery groups by the sensitive column "{col}"; its groups '
                        "cannot be checked for l-diversity",
                        policy_rule=f"tables.{guard.table}.privacy.l",
                        hint="group by the sensitive column in the outermost query",
                    )
                if block.windows:
                    raise UnsupportedQueryError(
                        f'window functions over groups labelled by the sensitive column "{col}"'
                        " would show groups that l-diversity withholds",
                        policy_rule=f"tables.{guard.table}.privacy.l",
                        hint="drop the window functions",
                    )

    # --- inner blocks protect themselves ----------------------------------------------
    def _protect_groups(self, block: Block) -> None:
        """An inner grouping keeps only groups with enough contributors (``HAVING``)."""
        select = block.node
        assert isinstance(select, exp.Select)
        counts = [(g, c) for g, _slot, c in self._group_counts(block) if g.enforced]
        condition = _groups_ok(counts)
        for guard, arg in self._diversity_args(block):
            if guard.enforced:
                condition = _and(condition, _gte(_count_distinct(arg), guard.l or 1))
        _add_having(select, condition)

    def _protect_rows(self, block: Block) -> None:
        """A row subquery keeps only rows whose class has enough contributors."""
        part = self.carry[id(block)]
        if not any(self.guards[s.table].enforced for s in part.slots if s.column is None):
            return
        select = block.node
        assert isinstance(select, exp.Select)
        width = len(select.selects)
        names = self._read_slots(self._emit(block, part.slots))
        figures = row_figures(
            names, part.unique, self.guards, [], self.dialect, only_enforced=True
        )
        outputs = [exp.column(p.alias_or_name, quoted=True) for p in select.selects[:width]]
        placeholder = exp.Null()
        select.replace(placeholder)  # the block keeps its nodes: references are replaced later
        body = figures_select(select, figures)
        wrapped = exp.select(*outputs).from_(body.subquery("_paradise_v", copy=False))
        conditions = [*figures.suppress, *_refusing(figures)]
        if conditions:
            wrapped = wrapped.where(_and_all(conditions), copy=False)
        placeholder.replace(wrapped)

    # --- counts ---------------------------------------------------------------------
    def _group_counts(self, block: Block) -> list[tuple[Guard, Slot, exp.Expr]]:
        """``COUNT(DISTINCT key)`` (``COUNT(*)`` where rows are contributors) per key slot."""
        part = self.carry[id(block)]
        keys = [s for s in part.slots if s.column is None]
        out = []
        for slot in keys:
            if part.unique.get((slot.table, slot.occ)) and len(keys) == 1:
                count: exp.Expr = exp.Count(this=exp.Star())
            else:
                count = _count_distinct(part.exprs[slot])
            out.append((self.guards[slot.table], slot, count))
        return out

    def _diversity_args(self, block: Block) -> list[tuple[Guard, exp.Expr]]:
        """Arguments of this block's aggregates over sensitive columns of tables with ``l``."""
        select = block.node
        assert isinstance(select, exp.Select)
        out = []
        for agg in select.find_all(exp.AggFunc):
            if self.model.block_of(agg) is not block:
                continue
            args = list(value_args(agg))
            if isinstance(agg.parent, exp.Filter):
                # FILTER (WHERE <sensitive> = v) counts a sensitive value like CASE does
                args += [c for c in agg.parent.expression.find_all(exp.Column)]
            for arg in args:
                for ref, col in self.model.lineage.expression(arg).sources:
                    guard = self.guards.get(ref.table)
                    if guard is not None and guard.l is not None and col in guard.sensitive:
                        out.append((guard, arg))
                        break
        return out

    # --- the released block -----------------------------------------------------------
    def _root(self) -> RootCount | None:
        root = self.model.root
        if self._passes_rows(root):
            part = self.carry[id(root)]
            if not part.slots:
                return None
            names = self._read_slots(self._emit(root, part.slots))
            return RootCount(False, slots=names, unique=dict(part.unique))
        leaves = [root] if root.kind == "select" else _leaves(root)
        if root.kind != "select" and (
            root.kind != "union_all" or any(self._passes_rows(b) for b in leaves)
        ):
            raise UnsupportedQueryError(
                "a set operation that mixes grouped and row-level branches over a protected "
                "table",
                hint="group every branch, or none",
            )
        if not any(self.carry[id(leaf)].slots for leaf in leaves):
            return None
        return self._root_groups(leaves)

    def _root_groups(self, leaves: list[Block]) -> RootCount:
        """Per released group, per guarded reference, its contributors; per sensitive aggregate
        its diversity; under ``refuse`` with windows, whether every group is large enough."""
        per_leaf = [(leaf, self._group_counts(leaf), self._diversity_args(leaf)) for leaf in leaves]
        slots: list[Slot] = []
        diverse: list[str] = []
        for _leaf, counts, divs in per_leaf:
            slots += [s for _g, s, _c in counts if s not in slots]
            diverse += [g.table for g, _a in divs if g.table not in diverse]
        refusing = any(self.guards[s.table].action is OnViolation.REFUSE for s in slots)
        windowed = refusing and any(leaf.windows for leaf in leaves)
        stats = [Stat("contributors", self.guards[s.table]) for s in slots]
        stats += [Stat("diversity", self.guards[t]) for t in diverse]
        if windowed:
            stats.append(Stat("all_ok", None))
        for leaf, counts, divs in per_leaf:
            select = leaf.node
            assert isinstance(select, exp.Select)
            by_slot = {s: c for _g, s, c in counts}
            figures = [by_slot.get(s, exp.Literal.number(0)).copy() for s in slots]
            for table in diverse:
                values = [_count_distinct(a) for g, a in divs if g.table == table]
                figures.append(_least(values) if values else exp.Null())
            suppressing = [(g, c) for g, _s, c in counts if g.action is OnViolation.SUPPRESS]
            condition = _groups_ok(suppressing)
            for guard, arg in divs:
                if guard.action is OnViolation.SUPPRESS:
                    condition = _and(condition, _gte(_count_distinct(arg), guard.l or 1))
            refused = [(g, c) for g, _s, c in counts if g.action is OnViolation.REFUSE]
            if select.args.get("having") is not None:
                # a HAVING never sees a group below the threshold: it cannot be an oracle
                condition = _and(condition, _groups_ok(refused))
            if not self.totals:
                _add_having(select, condition)
            if windowed:
                ok = _groups_ok(refused) or exp.true()
                flag = exp.Case(ifs=[exp.If(this=ok, true=exp.Literal.number(1))])
                flag.set("default", exp.Literal.number(0))
                figures.append(_all_ok(flag, self.dialect))
            for i, figure in enumerate(figures):
                select.select(
                    exp.alias_(figure, f"_paradise_g{i}", quoted=True), append=True, copy=False
                )
        return RootCount(True, stats=stats)


def row_figures(
    slots: dict[Slot, str],
    unique: dict[tuple[str, int], bool],
    guards: dict[str, Guard],
    sensitive: list[tuple[str, Guard, int]],
    dialect: str,
    *,
    only_enforced: bool = False,
) -> Figures:
    """Per guarded reference and linkable unit: distinct contributors of each row's class,
    and the diversity of every sensitive output column in it.

    ``slots`` name the hidden columns; ``sensitive`` lists ``(column name, guard, output
    position)`` of the outputs whose values must be l-diverse. Classes are formed over the
    touched quasi-identifiers of the unit (none: the whole answer). A row without a key for
    a reference (a ``UNION ALL`` branch that does not read it) has NULL figures for it.
    """
    figures = Figures()
    keys = sorted(
        {Slot(s.table, s.occ) for s in slots} | {s for s in slots if s.column is None},
        key=lambda s: (s.table, s.occ),
    )
    for key in keys:
        guard = guards[key.table]
        if only_enforced and not guard.enforced:
            continue
        touched = [s.column for s in slots if s.table == key.table and s.occ == key.occ]
        units = _units(guard, [c for c in touched if c is not None])
        rows_are_people = key not in slots  # a single reference whose rows are contributors
        key_col = None if rows_are_people else exp.column(slots[key], quoted=True)
        for unit in units:
            partition = [exp.column(slots[Slot(key.table, key.occ, c)], quoted=True) for c in unit]
            name = f"_paradise_n{len(figures.windows)}"
            if key_col is None:
                figure: exp.Expr = _window(exp.Count(this=exp.Star()), partition)
            else:
                figure = _distinct_window(figures, partition, key_col, dialect)
            figures.windows.append((name, figure))
            figures.stats.append(Stat("contributors", guard, tuple(unit)))
            value = exp.column(name, quoted=True)
            ok = exp.or_(
                exp.Is(this=value, expression=exp.Null()), _gte(value.copy(), guard.threshold)
            )
            if guard.action is OnViolation.SUPPRESS:
                figures.suppress.append(ok)
            for column, owner, position in sensitive:
                if owner.l is None:
                    continue
                dname = f"_paradise_d{len(figures.windows)}"
                diversity = _distinct_window(
                    figures, partition, exp.column(column, quoted=True), dialect, key=key_col
                )
                figures.windows.append((dname, diversity))
                figures.stats.append(Stat("diversity", owner, tuple(unit), position))
                dvalue = exp.column(dname, quoted=True)
                if OnViolation.SUPPRESS in (owner.action, guard.action):
                    figures.suppress.append(
                        exp.or_(
                            exp.Is(this=dvalue, expression=exp.Null()), _gte(dvalue.copy(), owner.l)
                        )
                    )
    return figures


def _all_ok(flag: exp.Expr, dialect: str) -> exp.Expr:
    """``MIN(flag) OVER ()`` of a 0/1 flag; on MariaDB as a sum (MIN OVER is quadratic there)."""
    if dialect != "mysql":
        return _window(exp.Min(this=flag), [])
    failing = _window(exp.Sum(this=exp.Literal.number(1) - exp.Paren(this=flag)), [])
    ok = exp.Case(ifs=[exp.If(this=exp.EQ(this=failing, expression=exp.Literal.number(0)),
                              true=exp.Literal.number(1))])
    ok.set("default", exp.Literal.number(0))
    return ok


def _distinct_window(
    figures: Figures,
    partition: list[exp.Expr],
    value: exp.Expr,
    dialect: str,
    *,
    key: exp.Expr | None = None,
) -> exp.Expr:
    """``COUNT(DISTINCT value) OVER (PARTITION BY ...)`` for engines without it: a dense rank
    per class in one pass, its maximum per class in the next. With ``key``, rows where the
    key is NULL (no contributor of this reference) get NULL."""
    spec = [p.copy() for p in partition]
    if key is not None:
        spec.append(exp.Is(this=key.copy(), expression=exp.Null()))
    rank = f"_paradise_r{len(figures.ranks)}"
    figures.ranks.append(
        (rank, _window(exp.func("DENSE_RANK"), spec, order=[random_order(value.copy(), dialect)]))
    )
    most: exp.Expr
    if dialect == "mysql":
        # MariaDB recomputes MAX() OVER a whole partition for every row (quadratic): the
        # distinct count is the ascending plus the descending dense rank, minus one
        down = f"_paradise_r{len(figures.ranks)}"
        descending = exp.Ordered(this=random_order(value.copy(), dialect), desc=True)
        figures.ranks.append(
            (down, _window(exp.func("DENSE_RANK"), [p.copy() for p in spec], order=[descending]))
        )
        most = exp.Paren(
            this=exp.column(rank, quoted=True)
            + exp.column(down, quoted=True)
            - exp.Literal.number(1)
        )
    else:
        most = _window(exp.Max(this=exp.column(rank, quoted=True)), [p.copy() for p in spec])
    if key is None:
        return most
    return exp.Case(
        ifs=[exp.If(this=exp.Is(this=key.copy(), expression=exp.Null()), true=exp.Null())],
        default=most,
    )


def figures_select(inner: exp.Query, figures: Figures) -> exp.Select:
    """``SELECT w.*, <windows> FROM (SELECT q.*, <ranks> FROM (<inner>) AS q) AS w``."""
    ranked = exp.select(exp.column(exp.Star(), table="_paradise_q")).from_(
        inner.subquery("_paradise_q", copy=False)
    )
    for name, rank in figures.ranks:
        ranked.select(exp.alias_(rank, name, quoted=True), append=True, copy=False)
    body = exp.select(exp.column(exp.Star(), table="_paradise_w")).from_(
        ranked.subquery("_paradise_w", copy=False)
    )
    for name, window in figures.windows:
        body.select(exp.alias_(window, name, quoted=True), append=True, copy=False)
    return body


def _refusing(figures: Figures) -> list[exp.Expr]:
    """Inside a subquery a refusing table's small classes are withheld like suppressed ones."""
    out = []
    for (name, _w), stat in zip(figures.windows, figures.stats, strict=True):
        if stat.guard is None or stat.guard.action is not OnViolation.REFUSE:
            continue
        value = exp.column(name, quoted=True)
        bound = stat.guard.threshold if stat.kind == "contributors" else (stat.guard.l or 1)
        out.append(exp.or_(exp.Is(this=value, expression=exp.Null()), _gte(value.copy(), bound)))
    return out


# --- small SQL builders -----------------------------------------------------------------


def _hidden_names(order: Sequence[Slot]) -> dict[Slot, str]:
    """The hidden output columns of a block that carries ``order``."""
    return {slot: f"_paradise_h{i}" for i, slot in enumerate(order)}


def _leaves(block: Block) -> list[Block]:
    if block.kind == "select":
        return [block]
    return [leaf for b in block.branches for leaf in _leaves(b)]


def _col(name: str, table: str) -> exp.Column:
    return exp.column(
        exp.to_identifier(name, quoted=True), table=exp.to_identifier(table, quoted=True)
    )


def _count_distinct(expr: exp.Expr) -> exp.Expr:
    return exp.Count(this=exp.Distinct(expressions=[expr.copy()]))


def _gte(value: exp.Expr, threshold: int) -> exp.Expr:
    return exp.GTE(this=value, expression=exp.Literal.number(threshold))


def _and(a: exp.Expr | None, b: exp.Expr | None) -> exp.Expr | None:
    if a is None:
        return b
    if b is None:
        return a
    return exp.and_(a, b, copy=False)


def _and_all(items: Iterable[exp.Expr]) -> exp.Expr:
    out: exp.Expr | None = None
    for item in items:
        out = _and(out, item)
    assert out is not None
    return out


def _least(values: list[exp.Expr]) -> exp.Expr:
    return values[0] if len(values) == 1 else exp.func("LEAST", *values)


def _add_having(select: exp.Select, condition: exp.Expr | None) -> None:
    if condition is None:
        return
    having = select.args.get("having")
    if having is not None:
        condition = exp.and_(condition, exp.paren(having.this, copy=False), copy=False)
    select.set("having", exp.Having(this=condition))


def _groups_ok(counts: list[tuple[Guard, exp.Expr]]) -> exp.Expr | None:
    """Each guarded reference the group reads has enough contributors, and one is read."""
    if not counts:
        return None
    each = [
        exp.or_(
            exp.EQ(this=c.copy(), expression=exp.Literal.number(0)), _gte(c.copy(), g.threshold)
        )
        for g, c in counts
    ]
    some = exp.or_(*(_gte(c.copy(), g.threshold) for g, c in counts))
    return exp.paren(_and_all([*each, exp.paren(some)]), copy=False)


def _window(
    func: exp.Expr, partition: list[exp.Expr], order: list[exp.Expr] | None = None
) -> exp.Expr:
    return exp.Window(
        this=func,
        partition_by=partition or None,
        order=exp.Order(expressions=order) if order else None,
        over="OVER",
    )


def _units(guard: Guard, touched: list[str]) -> list[list[str]]:
    """The touched columns split by the table's linkable units (one empty unit if none)."""
    units: list[list[str]] = []
    for unit in guard.units:
        cols = [c for c in unit if c in touched]
        if cols:
            units.append(cols)
    placed = {c for u in units for c in u}
    rest = [c for c in touched if c not in placed]
    if rest:
        units.append(rest)
    return units or [[]]


def value_args(agg: exp.Expr) -> list[exp.Expr]:
    """The value arguments of an aggregate (``DISTINCT a, b`` unpacked; ``*`` skipped)."""
    args: list[exp.Expr] = []
    for key in ("this", "expressions", "expression"):
        value = agg.args.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Distinct):
                args.extend(item.expressions)
            elif isinstance(item, exp.Expr) and not isinstance(item, exp.Star | exp.Literal):
                args.append(item)
    return args
