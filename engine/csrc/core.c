/* oneply.engine._core: the facts, the legal move ids and the state tokens of a batch of
 * positions in one call, the GIL released while it runs.
 *
 * engine/native.py is its only caller and the place its contract is written down: positions
 * come in as rows of POSITION_FIELDS unsigned 64-bit integers (python-chess's bitboards and
 * counters), results go out into arrays the caller allocated (the buffer protocol, so no
 * numpy headers are needed to build). The move vocabulary and the token alphabet are handed
 * over by configure() from engine/moves.py and engine/tokenizer.py, their one home. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "board.h"
#include "facts.h"

enum {
    P_PAWNS, P_KNIGHTS, P_BISHOPS, P_ROOKS, P_QUEENS, P_KINGS, P_WHITE, P_BLACK,
    P_CASTLING, P_EP, P_TURN, P_HALFMOVE, P_FULLMOVE, POSITION_FIELDS
};
#define STATE_LENGTH 77
#define MAX_COUNTER 999
#define MAX_LEGAL 218

/* per status code, why a row was left to the Python path */
enum { OK = 0, BAD_POSITION = 1, BAD_TOKENS = 2, TOO_MANY_MOVES = 3, NOT_CONFIGURED = 4 };

static int16_t MOVE_ID[64][64][5]; /* [from][to][promotion: none, q, r, b, n] */
static int8_t CHAR_TOKEN[128];     /* character -> token id, -1 where none */
static char TOKEN_CHAR[64];
static int configured = 0;

static const int PROMOTION_SLOT[7] = {0, 0, 4, 3, 2, 1, 0}; /* piece type -> " qrbn" index */

/* ----------------------------------------------------------------------------- positions */

static int board_of_row(const uint64_t *row, Board *b) {
    memset(b, 0, sizeof *b);
    for (int t = PAWN; t <= KING; t++) b->pieces[t] = row[P_PAWNS + t - 1];
    b->color[WHITE] = row[P_WHITE];
    b->color[BLACK] = row[P_BLACK];
    b->occupied = b->color[WHITE] | b->color[BLACK];
    b->ep = row[P_EP] < 64 ? (int)row[P_EP] : NO_SQUARE;
    b->turn = row[P_TURN] ? WHITE : BLACK;
    b->halfmove = (long)row[P_HALFMOVE];
    b->fullmove = (long)row[P_FULLMOVE];
    b->castling = row[P_CASTLING];
    b->castling = clean_castling_rights(b);
    /* what the compiled core answers for: one king a side, no pawn on a back rank, counters
     * a FEN can hold; anything else is python-chess's to handle */
    if (b->color[WHITE] & b->color[BLACK]) return BAD_POSITION;
    if (popcount(b->pieces[KING] & b->color[WHITE]) != 1) return BAD_POSITION;
    if (popcount(b->pieces[KING] & b->color[BLACK]) != 1) return BAD_POSITION;
    if (b->pieces[PAWN] & (BB_RANK(0) | BB_RANK(7))) return BAD_POSITION;
    if (row[P_HALFMOVE] > 1000000000ULL || row[P_FULLMOVE] > 1000000000ULL) return BAD_POSITION;
    bb_t typed = 0;
    for (int t = PAWN; t <= KING; t++) {
        if (typed & b->pieces[t]) return BAD_POSITION;
        typed |= b->pieces[t];
    }
    return typed == b->occupied ? OK : BAD_POSITION;
}

static int put_counter(int64_t *out, long value) {
    char text[8];
    int n = snprintf(text, sizeof text, "%ld", value < MAX_COUNTER ? value : MAX_COUNTER);
    for (int i = 0; i < 3; i++) out[i] = CHAR_TOKEN[(int)(i < n ? text[i] : '.')];
    return 3;
}

/* tokenizer.state_string: side, board (rank 8 first), castling, legal en passant, counters */
static void state_tokens(const Board *b, const Move *legal, int count, int64_t *out) {
    static const char LETTERS[7] = {'.', 'p', 'n', 'b', 'r', 'q', 'k'};
    int at = 0;
    out[at++] = CHAR_TOKEN[b->turn == WHITE ? 'w' : 'b'];
    for (int rank = 7; rank >= 0; rank--) {
        for (int file = 0; file < 8; file++) {
            int sq = rank * 8 + file, type = piece_type_at(b, sq);
            char c = LETTERS[type];
            if (type && (b->color[WHITE] & BB(sq))) c = (char)(c - 'a' + 'A');
            out[at++] = CHAR_TOKEN[(int)c];
        }
    }
    char castling[4] = {'.', '.', '.', '.'};
    int n = 0;
    if (b->castling & BB(7)) castling[n++] = 'K';
    if (b->castling & BB(0)) castling[n++] = 'Q';
    if (b->castling & BB(63)) castling[n++] = 'k';
    if (b->castling & BB(56)) castling[n++] = 'q';
    for (int i = 0; i < 4; i++) out[at++] = CHAR_TOKEN[(int)castling[i]];
    int ep = NO_SQUARE;
    for (int i = 0; i < count && ep == NO_SQUARE; i++)
        if (is_en_passant(b, legal[i])) ep = legal[i].to;
    out[at++] = CHAR_TOKEN[ep == NO_SQUARE ? '.' : 'a' + FILE_OF(ep)];
    out[at++] = CHAR_TOKEN[ep == NO_SQUARE ? '.' : '1' + RANK_OF(ep)];
    at += put_counter(out + at, b->halfmove);
    put_counter(out + at, b->fullmove);
}

static int counter_of(const int64_t *tokens, long *value) {
    char text[4] = {0};
    int n = 0;
    for (; n < 3 && tokens[n] >= 0 && tokens[n] < 64 && TOKEN_CHAR[tokens[n]] != '.'; n++) {
        text[n] = TOKEN_CHAR[tokens[n]];
        if (text[n] < '0' || text[n] > '9') return BAD_TOKENS;
    }
    if (n == 0) return BAD_TOKENS;
    for (int i = n; i < 3; i++)
        if (tokens[i] < 0 || tokens[i] >= 64 || TOKEN_CHAR[tokens[i]] != '.') return BAD_TOKENS;
    *value = strtol(text, NULL, 10);
    return OK;
}

/* compact.board_of_tokens: the position a row of 77 state tokens was made from */
static int row_of_tokens(const int64_t *tokens, uint64_t *row) {
    static const char *PIECES = "pnbrqk";
    memset(row, 0, sizeof(uint64_t) * POSITION_FIELDS);
    for (int i = 0; i < STATE_LENGTH; i++)
        if (tokens[i] < 0 || tokens[i] >= 64 || !TOKEN_CHAR[tokens[i]]) return BAD_TOKENS;
    char side = TOKEN_CHAR[tokens[0]];
    if (side != 'w' && side != 'b') return BAD_TOKENS;
    row[P_TURN] = side == 'w';
    for (int i = 0; i < 64; i++) {
        char c = TOKEN_CHAR[tokens[1 + i]];
        if (c == '.') continue;
        int white = c >= 'A' && c <= 'Z';
        const char *found = strchr(PIECES, white ? c - 'A' + 'a' : c);
        if (!found || !*found) return BAD_TOKENS;
        int sq = (7 - i / 8) * 8 + i % 8;
        row[P_PAWNS + (found - PIECES)] |= BB(sq);
        row[white ? P_WHITE : P_BLACK] |= BB(sq);
    }
    static const char *FLAGS = "KQkq";
    static const int ROOK_SQUARE[4] = {7, 0, 63, 56};
    int previous = -1, ended = 0;
    for (int i = 0; i < 4; i++) {
        char c = TOKEN_CHAR[tokens[65 + i]];
        if (c == '.') {
            ended = 1;
            continue;
        }
        const char *flag = strchr(FLAGS, c);
        if (ended || !flag || !*flag || flag - FLAGS <= previous) return BAD_TOKENS;
        previous = (int)(flag - FLAGS);
        row[P_CASTLING] |= BB(ROOK_SQUARE[previous]);
    }
    char file = TOKEN_CHAR[tokens[69]], rank = TOKEN_CHAR[tokens[70]];
    if (file == '.' && rank == '.') row[P_EP] = NO_SQUARE;
    else if (file >= 'a' && file <= 'h' && rank >= '1' && rank <= '8')
        row[P_EP] = (uint64_t)((rank - '1') * 8 + (file - 'a'));
    else return BAD_TOKENS;
    long halfmove, fullmove;
    if (counter_of(tokens + 71, &halfmove) || counter_of(tokens + 74, &fullmove)) return BAD_TOKENS;
    row[P_HALFMOVE] = (uint64_t)halfmove;
    row[P_FULLMOVE] = (uint64_t)(fullmove < 1 ? 1 : fullmove);
    return OK;
}

/* ------------------------------------------------------------------------------- batches */

typedef struct {
    const uint64_t *positions;
    Py_ssize_t count;
    int groups, want_squares, want_moves, width;
    int64_t *states, *ids, *counts, *squares;
    uint8_t *moves;
    uint8_t *status;
} Job;

static void encode_one(const Job *job, Py_ssize_t i) {
    Board b;
    job->status[i] = (uint8_t)board_of_row(job->positions + i * POSITION_FIELDS, &b);
    if (job->status[i] != OK) return;
    Move legal[MAX_MOVES];
    int count = legal_moves(&b, legal);
    if (count > job->width) {
        job->status[i] = TOO_MANY_MOVES;
        return;
    }
    job->counts[i] = count;
    int64_t *ids = job->ids + i * job->width;
    for (int k = 0; k < count; k++)
        ids[k] = MOVE_ID[legal[k].from][legal[k].to][PROMOTION_SLOT[legal[k].promotion]];
    for (int k = count; k < job->width; k++) ids[k] = -1;
    state_tokens(&b, legal, count, job->states + i * STATE_LENGTH);
    if (job->want_squares)
        square_facts(&b, job->groups, job->squares + i * 64 * SQUARE_FACT_COUNT);
    if (job->want_moves)
        move_facts(&b, legal, count, job->groups,
                   job->moves + i * (Py_ssize_t)job->width * MOVE_FACT_COUNT);
}

static int sized(Py_buffer *view, Py_ssize_t items, Py_ssize_t itemsize, const char *name) {
    if (view->len != items * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd bytes, got %zd", name,
                     items * itemsize, view->len);
        return 0;
    }
    return 1;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    Py_buffer pos, states, ids, counts, squares, moves, status;
    Job job;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*iiiiw*w*w*w*w*w*", &pos, &job.groups, &job.want_squares,
                          &job.want_moves, &job.width, &states, &ids, &counts, &squares, &moves,
                          &status))
        return NULL;
    Py_buffer *views[7] = {&pos, &states, &ids, &counts, &squares, &moves, &status};
    job.count = pos.len / (Py_ssize_t)(sizeof(uint64_t) * POSITION_FIELDS);
    Py_ssize_t n = job.count, width = job.width;
    int ok = configured || (PyErr_SetString(PyExc_RuntimeError, "call configure() first"), 0);
    ok = ok && (width > 0 && width <= MAX_LEGAL ? 1
                : (PyErr_SetString(PyExc_ValueError, "width out of range"), 0));
    ok = ok && sized(&pos, n * POSITION_FIELDS, 8, "positions");
    ok = ok && sized(&states, n * STATE_LENGTH, 8, "states") && sized(&ids, n * width, 8, "ids");
    ok = ok && sized(&counts, n, 8, "counts");
    ok = ok && (!job.want_squares || sized(&squares, n * 64 * SQUARE_FACT_COUNT, 8, "squares"));
    ok = ok && (!job.want_moves || sized(&moves, n * width * MOVE_FACT_COUNT, 1, "moves"));
    ok = ok && sized(&status, n, 1, "status");
    if (ok) {
        job.positions = pos.buf;
        job.states = states.buf;
        job.ids = ids.buf;
        job.counts = counts.buf;
        job.squares = squares.buf;
        job.moves = moves.buf;
        job.status = status.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) encode_one(&job, i);
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < 7; i++) PyBuffer_Release(views[i]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *from_tokens(PyObject *self, PyObject *args) {
    Py_buffer tokens, rows, status;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*w*", &tokens, &rows, &status)) return NULL;
    Py_ssize_t n = tokens.len / (Py_ssize_t)(sizeof(int64_t) * STATE_LENGTH);
    int ok = configured || (PyErr_SetString(PyExc_RuntimeError, "call configure() first"), 0);
    ok = ok && sized(&tokens, n * STATE_LENGTH, 8, "tokens");
    ok = ok && sized(&rows, n * POSITION_FIELDS, 8, "positions") && sized(&status, n, 1, "status");
    if (ok) {
        const int64_t *in = tokens.buf;
        uint64_t *out = rows.buf;
        uint8_t *codes = status.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            codes[i] = (uint8_t)row_of_tokens(in + i * STATE_LENGTH, out + i * POSITION_FIELDS);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&tokens);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&status);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static unsigned long long perft_of(const Board *b, int depth) {
    Move moves[MAX_MOVES];
    int count = legal_moves(b, moves);
    if (depth <= 1) return (unsigned long long)(depth == 1 ? count : 1);
    unsigned long long nodes = 0;
    for (int i = 0; i < count; i++) {
        Board after;
        push(b, moves[i], &after);
        nodes += perft_of(&after, depth - 1);
    }
    return nodes;
}

static PyObject *perft(PyObject *self, PyObject *args) {
    Py_buffer pos;
    int depth;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*i", &pos, &depth)) return NULL;
    Board b;
    int ok = sized(&pos, POSITION_FIELDS, 8, "position");
    int code = ok ? board_of_row(pos.buf, &b) : OK;
    PyBuffer_Release(&pos);
    if (!ok) return NULL;
    if (code != OK) return PyErr_Format(PyExc_ValueError, "position not supported (%d)", code);
    unsigned long long nodes;
    Py_BEGIN_ALLOW_THREADS
    nodes = perft_of(&b, depth);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(nodes);
}

static PyObject *configure(PyObject *self, PyObject *args) {
    Py_buffer table;
    const char *characters;
    Py_ssize_t length;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*s#", &table, &characters, &length)) return NULL;
    int ok = sized(&table, 64 * 64 * 5, 2, "move table");
    if (ok && length > 63) ok = (PyErr_SetString(PyExc_ValueError, "too many characters"), 0);
    if (ok) {
        memcpy(MOVE_ID, table.buf, sizeof MOVE_ID);
        memset(CHAR_TOKEN, -1, sizeof CHAR_TOKEN);
        memset(TOKEN_CHAR, 0, sizeof TOKEN_CHAR);
        for (Py_ssize_t i = 0; i < length; i++) {
            CHAR_TOKEN[(unsigned char)characters[i] & 127] = (int8_t)i;
            TOKEN_CHAR[i] = characters[i];
        }
        configured = 1;
    }
    PyBuffer_Release(&table);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"configure", configure, METH_VARARGS,
     "configure(move_table, characters): the move vocabulary as int16 [64, 64, 5] ids and "
     "the token alphabet."},
    {"encode", encode, METH_VARARGS,
     "encode(positions, groups, want_squares, want_moves, width, states, ids, counts, "
     "squares, moves, status): fill the output arrays for each position row."},
    {"from_tokens", from_tokens, METH_VARARGS,
     "from_tokens(tokens, positions, status): position rows from 77 state tokens each."},
    {"perft", perft, METH_VARARGS, "perft(position, depth): leaf nodes of the legal move tree."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_core",
                                    "The compiled facts, move ids and tokens (engine/native.py).",
                                    -1, METHODS, NULL, NULL, NULL, NULL};

static PyObject *names(const char *const *list, int count) {
    PyObject *tuple = PyTuple_New(count);
    for (int i = 0; tuple && i < count; i++)
        PyTuple_SET_ITEM(tuple, i, PyUnicode_FromString(list[i]));
    return tuple;
}

PyMODINIT_FUNC PyInit__core(void) {
    tables_init();
    facts_init();
    PyObject *module = PyModule_Create(&MODULE);
    if (!module) return NULL;
    PyModule_AddObject(module, "SQUARE_FACTS", names(SQUARE_FACT_NAMES, SQUARE_FACT_COUNT));
    PyModule_AddObject(module, "MOVE_FACTS", names(MOVE_FACT_NAMES, MOVE_FACT_COUNT));
    PyModule_AddObject(module, "GROUPS", names(GROUP_NAMES, 9));
    PyModule_AddIntConstant(module, "POSITION_FIELDS", POSITION_FIELDS);
    PyModule_AddIntConstant(module, "MAX_LEGAL", MAX_LEGAL);
    PyModule_AddIntConstant(module, "NO_SQUARE", NO_SQUARE);
    return module;
}
