/* The position, its attack tables and its legal moves, in python-chess's terms.
 *
 * Every rule here is python-chess's (chess/__init__.py): the same squares (a1 = 0 … h8 = 63),
 * colours (BLACK = 0, WHITE = 1), piece types (PAWN = 1 … KING = 6), the same move generation
 * order, the same push. The facts of engine/features.py are specified in Python on top of
 * python-chess; to be bit-identical to them the compiled core must see the board exactly as
 * python-chess does, down to the order in which legal moves come out.
 */
#ifndef ONEPLY_BOARD_H
#define ONEPLY_BOARD_H

#include <stdint.h>
#include <string.h>

typedef uint64_t bb_t;

enum { BLACK = 0, WHITE = 1 };
enum { NONE = 0, PAWN = 1, KNIGHT = 2, BISHOP = 3, ROOK = 4, QUEEN = 5, KING = 6 };
#define NO_SQUARE 64
#define BB_ALL (~(bb_t)0)
#define BB(sq) ((bb_t)1 << (sq))
#define RANK_OF(sq) ((sq) >> 3)
#define FILE_OF(sq) ((sq) & 7)
#define BB_RANK(r) ((bb_t)0xff << (8 * (r)))
#define BB_FILE(f) ((bb_t)0x0101010101010101ULL << (f))

/* The most legal moves a chess position has is 218; pseudo-legal lists stay below this. */
#define MAX_MOVES 256

typedef struct {
    bb_t pieces[7]; /* by piece type, index PAWN … KING (0 unused) */
    bb_t color[2];  /* by colour, BLACK and WHITE */
    bb_t occupied;
    bb_t castling;  /* the rook squares castling may use (python-chess castling_rights) */
    int ep;         /* en-passant square, or NO_SQUARE */
    int turn;       /* WHITE or BLACK */
    long halfmove, fullmove;
} Board;

typedef struct {
    uint8_t from, to, promotion; /* promotion: NONE or KNIGHT … QUEEN */
} Move;

static inline int lsb(bb_t b) { return __builtin_ctzll(b); }
static inline int msb(bb_t b) { return 63 - __builtin_clzll(b); }
static inline int popcount(bb_t b) { return __builtin_popcountll(b); }

void tables_init(void);

/* attack tables */
bb_t knight_attacks(int sq);
bb_t king_attacks(int sq);
bb_t pawn_attacks(int color, int sq);
bb_t diagonal_attacks(int sq, bb_t occupied);
bb_t straight_attacks(int sq, bb_t occupied);
bb_t rank_attacks(int sq, bb_t occupied);
bb_t file_attacks(int sq, bb_t occupied);
bb_t line_through(int a, int b); /* python-chess BB_RAYS[a][b]: the whole line, edge to edge */
bb_t between(int a, int b);      /* the squares strictly between a and b on their line */

/* the board */
int piece_type_at(const Board *b, int sq);
bb_t attacks_mask(const Board *b, int sq);
bb_t attackers_mask(const Board *b, int color, int sq, bb_t occupied);
int king_square(const Board *b, int color); /* NO_SQUARE when there is none */
int is_check(const Board *b);
int is_castling(const Board *b, Move m);
int is_en_passant(const Board *b, Move m);
int is_pinned(const Board *b, int color, int sq);
bb_t clean_castling_rights(const Board *b);
void push(const Board *b, Move m, Board *out);
void push_null(const Board *b, Board *out);

typedef struct {
    Move *moves;
    int count;
} MoveList;

/* pseudo-legal moves as python-chess generates them, from and to the masks' squares */
void pseudo_legal_moves(const Board *b, bb_t from_mask, bb_t to_mask, MoveList *list);
void pseudo_legal_ep(const Board *b, bb_t from_mask, bb_t to_mask, MoveList *list);
void castling_moves(const Board *b, bb_t from_mask, bb_t to_mask, MoveList *list);
/* whether a pseudo-legal move leaves its own king unattacked (python-chess's legality) */
int is_legal_pseudo(const Board *b, Move m);

/* legal moves in python-chess generation order; returns the count */
int legal_moves(const Board *b, Move *out);
int has_legal_move(const Board *b);
int gives_check(const Board *b, Move m);

#endif
