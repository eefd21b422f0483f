"""Look-ahead over the action-value network, when the user asks for it (off by default).

Why: one forward pass gives the value of *every* move of a position, which is exactly what a
best-first search needs at each node — priors to steer by and a value for every child before
it is ever visited. So a node costs one network call, and the search is AlphaZero's PUCT with
two changes for an action-value net (issue 19):

- priors are a softmax of the moves' expected wins (``temperature`` in win probability),
- an unvisited child's value is its parent's action value for that move (not a guess), and a
  node's own value, backed up when it is expanded, is its best move's action value.

Leaves are gathered ``batch`` at a time (virtual loss keeps one walk from repeating another)
and scored in one `score_many` call, the same batched path the engine and the bot use.
Checkmates, stalemates and draws by rule are scored exactly, without the network; so are
positions below the root that Syzygy tables cover, when tables are given (UCI option
SyzygyPath, the bot's engine.syzygy): a node the tables settle costs no network call. The tree
under the move played is kept for the next search (`advance`).

Values are win probabilities for the side to move at the node they belong to; an edge's value
is for the side that plays it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import chess
import numpy as np

from oneply.engine.play.books import tablebase_value
from oneply.engine.play.clock import SearchTime
from oneply.engine.play.inference import MoveScore, MoveScorer, Scorer
from oneply.engine.play.tree import Node, exact_value, logit, mate_along, mating_moves

#: virtual loss: a leaf being evaluated counts as a loss for whoever walks into it again
VIRTUAL_LOSS = 1.0
#: a node budget N also ends the search after this many × N walks (walks that end in finished
#: games cost no network call)
WALKS_PER_NODE = 4
#: the position node_seconds() times one batch of (a middlegame, 37 legal moves)
_MEASURED_FEN = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 0 8"
#: the most batches of leaves scored at once (`parallel_for`): more spreads the walks thin
MAX_PARALLEL = 4
#: nodes this close to the root get every mating move's value set to 1 when expanded (python-
#: chess finds them: about 0.5 ms a node, so not everywhere); deeper mates are found by visits
MATE_CHECK_DEPTH = 1


def parallel_for(threads: int) -> int:
    """Batches of leaves in flight for a scorer given `threads` cores: one a core (up to
    MAX_PARALLEL), so that every core scores while the Python walks the tree."""
    return max(1, min(threads, MAX_PARALLEL))


def search_threads(threads: int) -> tuple[int, int]:
    """(onnxruntime threads per call, calls at once) for a search on `threads` cores. Calls
    side by side rather than one call split across cores: a small network's call does not
    split well (`oneply bench` times the bundled model slower on two threads than on one),
    while batches side by side keep every core scoring."""
    parallel = parallel_for(threads)
    return max(1, threads // parallel), parallel


def searching_scorer(scorer: Scorer, threads: int) -> Scorer:
    """What a look-ahead on `threads` cores calls: `scorer` itself, or a session of its model
    file with search_threads' threads a call."""
    per_call, _ = search_threads(threads)
    return scorer if per_call == threads else Scorer(scorer.path, threads=per_call)


@dataclass
class Limits:
    """When a search stops: whichever comes first (None: no such bound)."""

    nodes: int | None = None
    seconds: float | None = None
    depth: int | None = None
    stop: threading.Event | None = None
    #: a clock's time manager (engine/play/clock.py): stops early when one move stands out, runs
    #: to `seconds` only in critical positions
    clock: SearchTime | None = None


@dataclass
class Info:
    """What a searching engine reports (UCI ``info``)."""

    depth: int
    seldepth: int
    nodes: int
    seconds: float
    value: float  # win probability for the side to move at the root
    pv: list[chess.Move]
    #: moves to mate along the pv when it ends in checkmate (negative: the root side is mated)
    mate: int | None = None
    tbhits: int = 0  # positions the Syzygy tables settled

    @property
    def nps(self) -> int:
        return int(self.nodes / self.seconds) if self.seconds > 0 else 0


@dataclass
class _Batch:
    """Walks whose leaves are being scored: backed up when their scores are in."""

    paths: list[list[tuple[Node, int]]]
    leaves: list[Node]
    todo: list[Node]  # the leaves the network scores (new, not finished games)
    submitted: float
    scores: Future[list[list[MoveScore]]] | None = None  # None: scored when finished


class TreeSearch:
    """PUCT over a MoveScorer. Reuse one object per game: the tree carries over.

    With ``parallel`` > 1, that many batches of leaves are scored at once on worker threads
    (onnxruntime releases the GIL), each launched while the others run: the next batch is
    walked while the network scores the last one. Batches are finished in the order they
    were launched, so a search is as deterministic as its scorer; ``parallel`` = 1 is the
    plain loop (walk, score, back up)."""

    def __init__(
        self,
        scorer: MoveScorer,
        c_puct: float = 1.5,
        temperature: float = 0.05,
        batch: int = 8,
        tablebase: Any = None,
        tablebase_pieces: int = 7,
        fpu_reduction: float = 0.0,
        parallel: int = 1,
    ) -> None:
        self.scorer, self.c_puct, self.temperature, self.batch = scorer, c_puct, temperature, batch
        self.parallel = max(1, parallel)  # batches of leaves scored at once (worker threads)
        self._workers: ThreadPoolExecutor | None = None
        self._pending = 0  # leaves launched and not yet scored
        self._finished_at = 0.0  # when the last batch's scores were applied
        self.fpu_reduction = fpu_reduction  # unvisited moves: their action value less this
        #: Syzygy tables (engine/play/books.open_tablebase) and the most pieces they are asked about
        self.tablebase, self.tablebase_pieces = tablebase, tablebase_pieces
        self.tbhits = 0  # positions of the current search the tables settled
        self.root: Node | None = None
        self.root_ply = 0  # plies of the current root's game (depth = plies below it)
        self.call_seconds = 0.0  # the last network call's duration: the next one is not
        # started when it would end past the time limit
        self.nodes = 0  # network evaluations of the current search
        self.walks = 0  # descents of the current search (a walk into a finished game costs
        # no evaluation: they are bounded too, or a solved tree would be walked forever)
        self._node_seconds: float | None = None  # one evaluation's cost, batched (measured)

    def node_seconds(self) -> float:
        """What one network evaluation costs in a batch of `batch` leaves: measured once on a
        middlegame position, then kept up to date by every call (a running mean), so the time
        manager (engine/play/clock.py) knows what a clock can buy."""
        if self._node_seconds is None:
            board = chess.Board(_MEASURED_FEN)
            self.scorer.score_many([board] * self.batch)  # warm: the first call allocates
            started = time.perf_counter()
            self.scorer.score_many([board] * self.batch)
            self._node_seconds = (time.perf_counter() - started) / self.batch
        return self._node_seconds

    # ----------------------------------------------------------------- the tree

    def _root_for(self, board: chess.Board) -> Node:
        """The kept subtree when `board` (with its history) is the last root, a child or a
        grandchild of it — the moves played since the last search —, else a fresh root."""
        if self.root is not None:
            children = list(self.root.children.values())
            grandchildren = [g for c in children for g in c.children.values()]
            for node in [self.root, *children, *grandchildren]:
                if node.board.move_stack == board.move_stack and node.board == board:
                    return node
        return Node(board.copy())

    def _expand(self, leaves: list[Node], at_root: bool = False) -> None:
        """One network call for every leaf that is not a finished game."""
        todo = self._prepare(leaves, at_root)
        if todo:
            started = time.perf_counter()
            self._apply(todo, self.scorer.score_many([n.board for n in todo]), started)

    def _prepare(self, leaves: list[Node], at_root: bool = False) -> list[Node]:
        """Mark `leaves` expanded (a walk now stops at them until their scores are in), settle
        finished games exactly, and return the rest: what the network must score. At the root
        a move is owed whenever one is legal: a draw by rule there (a position seen once
        before) ends lines inside the tree, never the search."""
        todo = []
        for leaf in leaves:
            owed = at_root and any(leaf.board.legal_moves)
            leaf.terminal = None if owed else self._exact(leaf.board)
            if leaf.terminal is None:
                todo.append(leaf)
            leaf.expanded = True
        return todo

    def _apply(self, todo: list[Node], scored: list[list[MoveScore]], started: float) -> None:
        """The network's scores into the leaves, and what one evaluation cost: the call's
        time per leaf, or with batches in flight side by side, the time since the last batch
        finished (the throughput the time manager can count on)."""
        finished = time.perf_counter()
        self.call_seconds = finished - started
        since = finished - max(started, self._finished_at) if self.parallel > 1 else None
        self._finished_at = finished
        per_node = (self.call_seconds if since is None else since) / len(todo)
        known = self._node_seconds
        self._node_seconds = per_node if known is None else 0.9 * known + 0.1 * per_node
        for leaf, scores in zip(todo, scored, strict=True):
            leaf.moves = [s.move for s in scores]
            wins = np.array([s.win for s in scores], dtype=np.float64)
            if len(leaf.board.move_stack) - self.root_ply <= MATE_CHECK_DEPTH:
                wins = np.maximum(wins, mating_moves(leaf.board, leaf.moves))
            logits = (wins - wins.max()) / self.temperature
            priors = np.exp(logits)
            leaf.priors = priors / priors.sum()
            leaf.first = wins
            leaf.visits = np.zeros(len(wins))
            leaf.totals = np.zeros(len(wins))
        self.nodes += len(todo)

    def _exact(self, board: chess.Board) -> float | None:
        """A finished game's value, else the tables' verdict when they cover the position."""
        value = exact_value(board)
        if value is None and self.tablebase is not None:
            value = tablebase_value(self.tablebase, board, self.tablebase_pieces)
            self.tbhits += value is not None
        return value

    def _select(self, node: Node) -> int:
        total = node.visits.sum()
        bonus = self.c_puct * node.priors * math.sqrt(total + 1) / (1 + node.visits)
        q = node.q() - self.fpu_reduction * (node.visits == 0)
        return int(np.argmax(q + bonus))

    def _walk(self, root: Node) -> list[tuple[Node, int]]:
        """Down the tree by PUCT to an unexpanded child; virtual loss on the way."""
        path: list[tuple[Node, int]] = []
        node = root
        while node.expanded and node.terminal is None and node.moves:
            index = self._select(node)
            node.visits[index] += 1
            node.totals[index] += 1.0 - VIRTUAL_LOSS  # counted as a loss until backed up
            path.append((node, index))
            child = node.children.get(index)
            if child is None:
                board = node.board.copy(stack=True)
                board.push(node.moves[index])
                child = node.children[index] = Node(board)
            node = child
        return path

    def _backup(self, path: list[tuple[Node, int]], leaf: Node) -> None:
        """Replace the virtual losses along `path` with the leaf's value, side by side."""
        value = leaf.value()  # for the side to move at the leaf
        for node, index in reversed(path):
            value = 1.0 - value  # for the side that played the edge
            node.totals[index] += value - (1.0 - VIRTUAL_LOSS)

    # ----------------------------------------------------------------- search

    def search(
        self,
        board: chess.Board,
        limits: Limits,
        on_info: Callable[[Info], None] | None = None,
    ) -> Info:
        """Search from `board` until a limit; returns the final Info (pv[0] is the move)."""
        start = time.perf_counter()
        root = self.root = self._root_for(board)
        self.root_ply = len(root.board.move_stack)
        self.nodes = self.walks = self.tbhits = 0
        if root.terminal is not None:  # a draw by rule in the kept tree: searched from here
            root.expanded = False
        try:
            return self._run(root, limits, start, on_info)
        except BaseException:  # leaves whose scores never came: the next search starts afresh
            self.root, self._pending = None, 0
            raise

    def _run(
        self, root: Node, limits: Limits, start: float, on_info: Callable[[Info], None] | None
    ) -> Info:
        """The root expanded (or its kept mates refreshed), then the loop: launch batches while
        the limits allow, finish them in launch order."""
        if root.expanded:  # kept from the last search: its mates too
            root.first = np.maximum(root.first, mating_moves(root.board, root.moves))
        else:
            self._expand([root], at_root=True)
        if root.terminal is not None or not root.moves:
            return Info(0, 0, self.nodes, 0.0, root.value(), [])
        seldepth = 0
        reported = self._info(start, seldepth)
        in_flight: deque[_Batch] = deque()
        while True:
            if not self._done(limits, start, reported.depth):
                in_flight.append(self._launch(root, limits))
                if len(in_flight) < self.parallel:
                    continue  # fill the pipeline before waiting for the oldest batch
            if not in_flight:
                break
            batch = in_flight.popleft()
            self._finish(batch)
            seldepth = max([seldepth, *(len(path) for path in batch.paths)])
            info = self._info(start, seldepth)
            changed = info.depth != reported.depth or info.pv[:1] != reported.pv[:1]
            if on_info is not None and changed:
                on_info(info)
            reported = info
        return self._info(start, seldepth)

    def _launch(self, root: Node, limits: Limits) -> _Batch:
        """Walk a batch of leaves (virtual loss keeps the walks apart) and start scoring the
        new ones: on a worker thread when batches run side by side, else when finished."""
        paths = [self._walk(root) for _ in range(self._batch_size(limits))]
        self.walks += len(paths)
        leaves = [self._leaf(root, path) for path in paths]
        todo = self._prepare(
            list({id(leaf): leaf for leaf in leaves if not leaf.expanded}.values())
        )
        batch = _Batch(paths, leaves, todo, time.perf_counter())
        if todo and self.parallel > 1:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(self.parallel, thread_name_prefix="search")
            batch.scores = self._workers.submit(self.scorer.score_many, [n.board for n in todo])
        self._pending += len(todo)
        return batch

    def _finish(self, batch: _Batch) -> None:
        """Its scores into the tree, then every walk of the batch backed up. Batches finish in
        launch order, so a walk that stopped at a leaf an earlier batch was scoring finds it
        scored."""
        self._pending -= len(batch.todo)
        if batch.todo:
            boards = [n.board for n in batch.todo]
            scored = (
                self.scorer.score_many(boards) if batch.scores is None else batch.scores.result()
            )
            self._apply(batch.todo, scored, batch.submitted)
        for path, leaf in zip(batch.paths, batch.leaves, strict=True):
            self._backup(path, leaf)

    def rank(
        self,
        board: chess.Board,
        limits: Limits,
        on_info: Callable[[Info], None] | None = None,
    ) -> tuple[Info, list[MoveScore]]:
        """Search `board`, then its moves ranked by the search (`ranked`): what every caller
        that plays by the move policy (UCI option Search, the bot's engine.search, analyse
        --search, SearchScorer) hands to MovePolicy.choose, so its rules apply once, on top."""
        info = self.search(board, limits, on_info)
        return info, self.ranked()

    def _batch_size(self, limits: Limits) -> int:
        if limits.nodes is None:
            return self.batch
        return max(1, min(self.batch, limits.nodes - self.nodes - self._pending))

    @staticmethod
    def _leaf(root: Node, path: list[tuple[Node, int]]) -> Node:
        if not path:
            return root
        node, index = path[-1]
        return node.children[index]

    def _done(self, limits: Limits, start: float, depth: int) -> bool:
        if limits.stop is not None and limits.stop.is_set():
            return True
        if limits.nodes is not None and (
            self.nodes + self._pending >= limits.nodes
            or self.walks >= WALKS_PER_NODE * limits.nodes
        ):
            return True
        if limits.depth is not None and depth >= limits.depth:
            return True
        elapsed = time.perf_counter() - start
        if limits.seconds is not None and elapsed + self.call_seconds >= limits.seconds:
            return True
        if limits.clock is None or self.root is None:
            return False
        gap, lead = self.root_gap(self.root)
        if elapsed + self.call_seconds >= limits.clock.allowed(gap):
            return True
        if limits.clock.fixed:
            return False
        return lead > limits.clock.nodes_left(elapsed, gap)  # the best move cannot be caught

    def root_gap(self, node: Node) -> tuple[float, float]:
        """How far the most visited move stands out: its value less the best other move's, in
        logits of win probability (0.95 against 0.97 is as far as 0.50 against 0.63, so a won
        position's moves are not all "close"), and its lead in visits over the next most
        visited: what the time manager reads (engine/play/clock.py)."""
        if len(node.moves) < 2:
            return math.inf, math.inf
        best = self.best_index(node)
        logits = logit(node.q())
        others = np.delete(logits, best)
        visits = np.sort(node.visits)
        return float(logits[best] - others.max()), float(visits[-1] - visits[-2])

    def _info(self, start: float, seldepth: int) -> Info:
        assert self.root is not None
        pv = self.principal_variation()
        return Info(
            depth=len(pv),
            seldepth=max(seldepth, len(pv)),
            nodes=self.nodes,
            seconds=time.perf_counter() - start,
            value=self.root.value(),
            pv=pv,
            mate=mate_along(self.root.board, pv),
            tbhits=self.tbhits,
        )

    def best_index(self, node: Node) -> int:
        """The most visited move (the highest value among equals; the network's best when
        nothing was visited)."""
        return int(np.lexsort((node.q(), node.visits))[-1])

    def ranked(self) -> list[MoveScore]:
        """The root's moves, best first by the search (visits, then value), each with its
        searched value: what the move policy and every MoveScorer caller read."""
        root = self.root
        if root is None or not root.moves:
            return []
        q = root.q()
        order = np.lexsort((q, root.visits))[::-1]
        return [MoveScore(root.moves[i], float(q[i])) for i in order]

    def principal_variation(self) -> list[chess.Move]:
        """Most-visited moves from the root down, while they have been visited."""
        pv: list[chess.Move] = []
        node = self.root
        while node is not None and node.moves:
            index = self.best_index(node)
            pv.append(node.moves[index])
            if node.visits[index] == 0:
                break
            node = node.children.get(index)
        return pv


class SearchScorer:
    """A MoveScorer that searches: each position's moves ranked by the search (visits, then
    value), each with its searched value. Anything that plays from a MoveScorer — the move
    policy, the puzzle solver, the arena, the bot's batcher — can then play with look-ahead."""

    def __init__(self, scorer: MoveScorer, nodes: int, **options: float) -> None:
        self.tree = TreeSearch(scorer, **options)  # type: ignore[arg-type]
        self.limit = nodes

    def score(self, board: chess.Board) -> list[MoveScore]:
        return self.tree.rank(board, Limits(nodes=self.limit))[1]

    def score_many(self, boards: Sequence[chess.Board]) -> list[list[MoveScore]]:
        return [self.score(board) for board in boards]
