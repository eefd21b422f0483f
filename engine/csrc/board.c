/* Attack tables, push and legal move generation, as python-chess defines them (board.h). */
#include "board.h"

static bb_t KNIGHT_TABLE[64], KING_TABLE[64], PAWN_TABLE[2][64];
static bb_t RAY_TABLE[8][64]; /* per direction, the squares from sq to the edge (sq excluded) */
static bb_t LINE_TABLE[64][64], BETWEEN_TABLE[64][64];

/* directions 0-3 grow the square index (lsb is the nearest blocker), 4-7 shrink it (msb) */
static const int DIR_FILE[8] = {1, 0, 1, -1, -1, 0, -1, 1};
static const int DIR_RANK[8] = {0, 1, 1, 1, 0, -1, -1, -1};
enum { EAST, NORTH, NORTH_EAST, NORTH_WEST, WEST, SOUTH, SOUTH_WEST, SOUTH_EAST };

static bb_t step_mask(int sq, const int (*deltas)[2], int count) {
    bb_t mask = 0;
    for (int i = 0; i < count; i++) {
        int f = FILE_OF(sq) + deltas[i][0], r = RANK_OF(sq) + deltas[i][1];
        if (f >= 0 && f < 8 && r >= 0 && r < 8) mask |= BB(r * 8 + f);
    }
    return mask;
}

void tables_init(void) {
    static const int knight[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2},
                                     {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    static const int king[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1},
                                   {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    static const int white_pawn[2][2] = {{-1, 1}, {1, 1}};
    static const int black_pawn[2][2] = {{-1, -1}, {1, -1}};
    for (int sq = 0; sq < 64; sq++) {
        KNIGHT_TABLE[sq] = step_mask(sq, knight, 8);
        KING_TABLE[sq] = step_mask(sq, king, 8);
        PAWN_TABLE[WHITE][sq] = step_mask(sq, white_pawn, 2);
        PAWN_TABLE[BLACK][sq] = step_mask(sq, black_pawn, 2);
        for (int d = 0; d < 8; d++) {
            bb_t ray = 0;
            int f = FILE_OF(sq) + DIR_FILE[d], r = RANK_OF(sq) + DIR_RANK[d];
            for (; f >= 0 && f < 8 && r >= 0 && r < 8; f += DIR_FILE[d], r += DIR_RANK[d])
                ray |= BB(r * 8 + f);
            RAY_TABLE[d][sq] = ray;
        }
    }
    for (int a = 0; a < 64; a++) {
        for (int b = 0; b < 64; b++) {
            LINE_TABLE[a][b] = BETWEEN_TABLE[a][b] = 0;
            for (int d = 0; d < 8; d++) {
                if (!(RAY_TABLE[d][a] & BB(b))) continue;
                LINE_TABLE[a][b] = RAY_TABLE[d][a] | RAY_TABLE[(d + 4) % 8][a] | BB(a);
                BETWEEN_TABLE[a][b] = RAY_TABLE[d][a] & ~RAY_TABLE[d][b] & ~BB(b);
            }
        }
    }
}

bb_t knight_attacks(int sq) { return KNIGHT_TABLE[sq]; }
bb_t king_attacks(int sq) { return KING_TABLE[sq]; }
bb_t pawn_attacks(int color, int sq) { return PAWN_TABLE[color][sq]; }
bb_t line_through(int a, int b) { return LINE_TABLE[a][b]; }
bb_t between(int a, int b) { return BETWEEN_TABLE[a][b]; }

static bb_t ray_attacks(int d, int sq, bb_t occupied) {
    bb_t ray = RAY_TABLE[d][sq], blockers = ray & occupied;
    if (!blockers) return ray;
    int first = d < 4 ? lsb(blockers) : msb(blockers);
    return ray & ~RAY_TABLE[d][first];
}

bb_t rank_attacks(int sq, bb_t occupied) {
    return ray_attacks(EAST, sq, occupied) | ray_attacks(WEST, sq, occupied);
}

bb_t file_attacks(int sq, bb_t occupied) {
    return ray_attacks(NORTH, sq, occupied) | ray_attacks(SOUTH, sq, occupied);
}

bb_t straight_attacks(int sq, bb_t occupied) {
    return rank_attacks(sq, occupied) | file_attacks(sq, occupied);
}

bb_t diagonal_attacks(int sq, bb_t occupied) {
    return ray_attacks(NORTH_EAST, sq, occupied) | ray_attacks(NORTH_WEST, sq, occupied) |
           ray_attacks(SOUTH_WEST, sq, occupied) | ray_attacks(SOUTH_EAST, sq, occupied);
}

int piece_type_at(const Board *b, int sq) {
    bb_t mask = BB(sq);
    if (!(b->occupied & mask)) return NONE;
    for (int type = PAWN; type <= KING; type++)
        if (b->pieces[type] & mask) return type;
    return NONE;
}

bb_t attacks_mask(const Board *b, int sq) {
    bb_t mask = BB(sq);
    if (b->pieces[PAWN] & mask) return PAWN_TABLE[(b->color[WHITE] & mask) ? WHITE : BLACK][sq];
    if (b->pieces[KNIGHT] & mask) return KNIGHT_TABLE[sq];
    if (b->pieces[KING] & mask) return KING_TABLE[sq];
    bb_t attacks = 0;
    if ((b->pieces[BISHOP] | b->pieces[QUEEN]) & mask) attacks = diagonal_attacks(sq, b->occupied);
    if ((b->pieces[ROOK] | b->pieces[QUEEN]) & mask) attacks |= straight_attacks(sq, b->occupied);
    return attacks;
}

bb_t attackers_mask(const Board *b, int color, int sq, bb_t occupied) {
    bb_t straight = b->pieces[QUEEN] | b->pieces[ROOK];
    bb_t diagonal = b->pieces[QUEEN] | b->pieces[BISHOP];
    bb_t attackers = (KING_TABLE[sq] & b->pieces[KING]) | (KNIGHT_TABLE[sq] & b->pieces[KNIGHT]) |
                     (straight_attacks(sq, occupied) & straight) |
                     (diagonal_attacks(sq, occupied) & diagonal) |
                     (PAWN_TABLE[!color][sq] & b->pieces[PAWN]);
    return attackers & b->color[color];
}

int king_square(const Board *b, int color) {
    bb_t mask = b->color[color] & b->pieces[KING];
    return mask ? msb(mask) : NO_SQUARE;
}

int is_check(const Board *b) {
    int king = king_square(b, b->turn);
    return king != NO_SQUARE && attackers_mask(b, !b->turn, king, b->occupied) != 0;
}

int is_castling(const Board *b, Move m) {
    if (!(b->pieces[KING] & BB(m.from))) return 0;
    int diff = FILE_OF(m.from) - FILE_OF(m.to);
    return diff > 1 || diff < -1 || (b->pieces[ROOK] & b->color[b->turn] & BB(m.to)) != 0;
}

int is_en_passant(const Board *b, Move m) {
    int diff = m.to - m.from;
    return b->ep == m.to && (b->pieces[PAWN] & BB(m.from)) &&
           (diff == 7 || diff == 9 || diff == -7 || diff == -9) && !(b->occupied & BB(m.to));
}

/* python-chess pin_mask(color, sq) */
static bb_t pin_mask(const Board *b, int color, int sq) {
    int king = king_square(b, color);
    if (king == NO_SQUARE) return BB_ALL;
    bb_t mask = BB(sq), straight = b->pieces[ROOK] | b->pieces[QUEEN];
    bb_t lines[3] = {file_attacks(king, 0), rank_attacks(king, 0), diagonal_attacks(king, 0)};
    bb_t sliders[3] = {straight, straight, b->pieces[BISHOP] | b->pieces[QUEEN]};
    for (int i = 0; i < 3; i++) {
        if (!(lines[i] & mask)) continue;
        bb_t snipers = lines[i] & sliders[i] & b->color[!color];
        for (; snipers; snipers &= ~BB(msb(snipers))) {
            int sniper = msb(snipers);
            if ((between(sniper, king) & (b->occupied | mask)) == mask)
                return line_through(king, sniper);
        }
        break;
    }
    return BB_ALL;
}

int is_pinned(const Board *b, int color, int sq) { return pin_mask(b, color, sq) != BB_ALL; }

bb_t clean_castling_rights(const Board *b) {
    bb_t castling = b->castling & b->pieces[ROOK];
    bb_t white = castling & BB_RANK(0) & b->color[WHITE] & (BB(0) | BB(7));
    bb_t black = castling & BB_RANK(7) & b->color[BLACK] & (BB(56) | BB(63));
    if (!(b->color[WHITE] & b->pieces[KING] & BB(4))) white = 0;
    if (!(b->color[BLACK] & b->pieces[KING] & BB(60))) black = 0;
    return white | black;
}

static void remove_piece(Board *b, int sq) {
    bb_t clear = ~BB(sq);
    for (int type = PAWN; type <= KING; type++) b->pieces[type] &= clear;
    b->color[WHITE] &= clear;
    b->color[BLACK] &= clear;
    b->occupied &= clear;
}

static void set_piece(Board *b, int sq, int type, int color) {
    remove_piece(b, sq);
    b->pieces[type] |= BB(sq);
    b->color[color] |= BB(sq);
    b->occupied |= BB(sq);
}

/* python-chess push for a pseudo-legal move in standard notation (castling as e1g1); the
 * castling rights are taken as they are (python-chess cleans them only at a game's root). */
void push(const Board *b, Move m, Board *out) {
    *out = *b;
    Board *n = out;
    int ep = b->ep, turn = b->turn, from = m.from, to = m.to;
    /* _to_chess960: the king's two-square move is written as king takes own rook */
    if (from == 4 && (b->pieces[KING] & BB(4))) {
        if (to == 6 && !(b->pieces[ROOK] & BB(6))) to = 7;
        else if (to == 2 && !(b->pieces[ROOK] & BB(2))) to = 0;
    } else if (from == 60 && (b->pieces[KING] & BB(60))) {
        if (to == 62 && !(b->pieces[ROOK] & BB(62))) to = 63;
        else if (to == 58 && !(b->pieces[ROOK] & BB(58))) to = 56;
    }
    n->ep = NO_SQUARE;
    n->halfmove++;
    if (turn == BLACK) n->fullmove++;
    bb_t from_bb = BB(from), to_bb = BB(to);
    bb_t touched = from_bb ^ to_bb;
    if ((touched & b->pieces[PAWN]) || (touched & b->color[!turn])) n->halfmove = 0;
    int type = piece_type_at(n, from);
    remove_piece(n, from);
    int captured = piece_type_at(n, to);
    n->castling &= ~to_bb & ~from_bb;
    if (type == KING) {
        n->castling &= turn == WHITE ? ~BB_RANK(0) : ~BB_RANK(7);
    } else if (captured == KING) {
        if (turn == WHITE && RANK_OF(to) == 7) n->castling &= ~BB_RANK(7);
        else if (turn == BLACK && RANK_OF(to) == 0) n->castling &= ~BB_RANK(0);
    }
    if (type == PAWN) {
        int diff = to - from;
        if (diff == 16 && RANK_OF(from) == 1) {
            n->ep = from + 8;
        } else if (diff == -16 && RANK_OF(from) == 6) {
            n->ep = from - 8;
        } else if (to == ep && (diff == 7 || diff == 9 || diff == -7 || diff == -9) && !captured) {
            remove_piece(n, ep + (turn == WHITE ? -8 : 8));
        }
    }
    if (m.promotion) type = m.promotion;
    if (type == KING && (n->color[turn] & to_bb)) { /* castling: king takes own rook */
        int a_side = FILE_OF(to) < FILE_OF(from), back = turn == WHITE ? 0 : 56;
        remove_piece(n, from);
        remove_piece(n, to);
        set_piece(n, back + (a_side ? 2 : 6), KING, turn);
        set_piece(n, back + (a_side ? 3 : 5), ROOK, turn);
    } else {
        set_piece(n, to, type, turn);
    }
    n->turn = !turn;
}

void push_null(const Board *b, Board *out) {
    *out = *b;
    out->ep = NO_SQUARE;
    out->halfmove++;
    if (b->turn == BLACK) out->fullmove++;
    out->turn = !b->turn;
}

/* ---------------------------------------------------------------- move generation */

static inline void add(MoveList *list, int from, int to, int promotion) {
    Move m = {(uint8_t)from, (uint8_t)to, (uint8_t)promotion};
    list->moves[list->count++] = m;
}

static void add_pawn(MoveList *list, int from, int to) {
    if (RANK_OF(to) == 0 || RANK_OF(to) == 7) {
        add(list, from, to, QUEEN);
        add(list, from, to, ROOK);
        add(list, from, to, BISHOP);
        add(list, from, to, KNIGHT);
    } else {
        add(list, from, to, NONE);
    }
}

static int attacked_for_king(const Board *b, bb_t path, bb_t occupied) {
    for (; path; path &= ~BB(msb(path)))
        if (attackers_mask(b, !b->turn, msb(path), occupied)) return 1;
    return 0;
}

void castling_moves(const Board *b, bb_t from_mask, bb_t to_mask, MoveList *list) {
    bb_t backrank = b->turn == WHITE ? BB_RANK(0) : BB_RANK(7);
    bb_t king = b->color[b->turn] & b->pieces[KING] & backrank & from_mask;
    king &= -king;
    if (!king) return;
    int king_sq = lsb(king), rank = b->turn == WHITE ? 0 : 7;
    bb_t candidates = clean_castling_rights(b) & backrank & to_mask;
    for (; candidates; candidates &= ~BB(msb(candidates))) {
        int candidate = msb(candidates);
        bb_t rook = BB(candidate);
        int a_side = rook < king;
        int king_to = rank * 8 + (a_side ? 2 : 6), rook_to = rank * 8 + (a_side ? 3 : 5);
        bb_t king_path = between(king_sq, king_to), rook_path = between(candidate, rook_to);
        bb_t squares = king_path | rook_path | BB(king_to) | BB(rook_to);
        if ((b->occupied ^ king ^ rook) & squares) continue;
        if (attacked_for_king(b, king_path | king, b->occupied ^ king)) continue;
        if (attacked_for_king(b, BB(king_to), b->occupied ^ king ^ rook ^ BB(rook_to))) continue;
        /* _from_chess960: standard notation when the king stands on e1/e8 */
        int to = candidate;
        if (king_sq == 4 && candidate == 7) to = 6;
        else if (king_sq == 4 && candidate == 0) to = 2;
        else if (king_sq == 60 && candidate == 63) to = 62;
        else if (king_sq == 60 && candidate == 56) to = 58;
        add(list, king_sq, to, NONE);
    }
}

void pseudo_legal_ep(const Board *b, bb_t from_mask, bb_t to_mask, MoveList *list) {
    if (b->ep == NO_SQUARE || b->ep == 0 || !(BB(b->ep) & to_mask)) return;
    if (BB(b->ep) & b->occupied) return;
    bb_t capturers = b->pieces[PAWN] & b->color[b->turn] & from_mask &
                     PAWN_TABLE[!b->turn][b->ep] & BB_RANK(b->turn == WHITE ? 4 : 3);
    for (; capturers; capturers &= ~BB(msb(capturers))) add(list, msb(capturers), b->ep, NONE);
}

void pseudo_legal_moves(const Board *b, bb_t from_mask, bb_t to_mask, MoveList *list) {
    int turn = b->turn;
    bb_t own = b->color[turn];
    bb_t non_pawns = own & ~b->pieces[PAWN] & from_mask;
    for (; non_pawns; non_pawns &= ~BB(msb(non_pawns))) {
        int from = msb(non_pawns);
        bb_t targets = attacks_mask(b, from) & ~own & to_mask;
        for (; targets; targets &= ~BB(msb(targets))) add(list, from, msb(targets), NONE);
    }
    if (from_mask & b->pieces[KING]) castling_moves(b, from_mask, to_mask, list);
    bb_t pawns = b->pieces[PAWN] & own & from_mask;
    if (!pawns) return;
    for (bb_t capturers = pawns; capturers; capturers &= ~BB(msb(capturers))) {
        int from = msb(capturers);
        bb_t targets = PAWN_TABLE[turn][from] & b->color[!turn] & to_mask;
        for (; targets; targets &= ~BB(msb(targets))) add_pawn(list, from, msb(targets));
    }
    bb_t single, twice;
    if (turn == WHITE) {
        single = (pawns << 8) & ~b->occupied;
        twice = (single << 8) & ~b->occupied & (BB_RANK(2) | BB_RANK(3));
    } else {
        single = (pawns >> 8) & ~b->occupied;
        twice = (single >> 8) & ~b->occupied & (BB_RANK(5) | BB_RANK(4));
    }
    single &= to_mask;
    twice &= to_mask;
    for (; single; single &= ~BB(msb(single))) {
        int to = msb(single);
        add_pawn(list, to + (turn == BLACK ? 8 : -8), to);
    }
    for (; twice; twice &= ~BB(msb(twice))) {
        int to = msb(twice);
        add(list, to + (turn == BLACK ? 16 : -16), to, NONE);
    }
    if (b->ep != NO_SQUARE && b->ep != 0) pseudo_legal_ep(b, from_mask, to_mask, list);
}

static void evasions(const Board *b, int king, bb_t checkers, MoveList *list) {
    bb_t sliders = checkers & (b->pieces[BISHOP] | b->pieces[ROOK] | b->pieces[QUEEN]);
    bb_t attacked = 0;
    for (; sliders; sliders &= ~BB(msb(sliders)))
        attacked |= line_through(king, msb(sliders)) & ~BB(msb(sliders));
    bb_t steps = KING_TABLE[king] & ~b->color[b->turn] & ~attacked;
    for (; steps; steps &= ~BB(msb(steps))) add(list, king, msb(steps), NONE);
    int checker = msb(checkers);
    if (BB(checker) != checkers) return;
    bb_t target = between(king, checker) | checkers;
    pseudo_legal_moves(b, ~b->pieces[KING], target, list);
    if (b->ep != NO_SQUARE && b->ep != 0 && !(BB(b->ep) & target)) {
        int last_double = b->ep + (b->turn == WHITE ? -8 : 8);
        if (last_double == checker) pseudo_legal_ep(b, BB_ALL, BB_ALL, list);
    }
}

static bb_t slider_blockers(const Board *b, int king) {
    bb_t straight = b->pieces[ROOK] | b->pieces[QUEEN];
    bb_t diagonal = b->pieces[BISHOP] | b->pieces[QUEEN];
    bb_t snipers = ((rank_attacks(king, 0) | file_attacks(king, 0)) & straight) |
                   (diagonal_attacks(king, 0) & diagonal);
    bb_t blockers = 0;
    for (snipers &= b->color[!b->turn]; snipers; snipers &= ~BB(msb(snipers))) {
        bb_t inside = between(king, msb(snipers)) & b->occupied;
        if (inside && popcount(inside) == 1) blockers |= inside;
    }
    return blockers & b->color[b->turn];
}

static int ep_skewered(const Board *b, int king, int capturer) {
    int last_double = b->ep + (b->turn == WHITE ? -8 : 8);
    bb_t occupancy = (b->occupied & ~BB(last_double) & ~BB(capturer)) | BB(b->ep);
    bb_t them = b->color[!b->turn];
    if (rank_attacks(king, occupancy) & them & (b->pieces[ROOK] | b->pieces[QUEEN])) return 1;
    if (diagonal_attacks(king, occupancy) & them & (b->pieces[BISHOP] | b->pieces[QUEEN]))
        return 1;
    return 0;
}

static int is_safe(const Board *b, int king, bb_t blockers, Move m) {
    if (m.from == king) {
        if (is_castling(b, m)) return 1;
        return attackers_mask(b, !b->turn, m.to, b->occupied) == 0;
    }
    if (is_en_passant(b, m))
        return (pin_mask(b, b->turn, m.from) & BB(m.to)) && !ep_skewered(b, king, m.from);
    return !(blockers & BB(m.from)) || (line_through(m.from, m.to) & BB(king));
}

int legal_moves(const Board *b, Move *out) {
    Move pseudo[MAX_MOVES];
    MoveList list = {pseudo, 0};
    bb_t king_mask = b->pieces[KING] & b->color[b->turn];
    if (!king_mask) {
        MoveList all = {out, 0};
        pseudo_legal_moves(b, BB_ALL, BB_ALL, &all);
        return all.count;
    }
    int king = msb(king_mask);
    bb_t blockers = slider_blockers(b, king);
    bb_t checkers = attackers_mask(b, !b->turn, king, b->occupied);
    if (checkers) evasions(b, king, checkers, &list);
    else pseudo_legal_moves(b, BB_ALL, BB_ALL, &list);
    int count = 0;
    for (int i = 0; i < list.count; i++)
        if (is_safe(b, king, blockers, pseudo[i])) out[count++] = pseudo[i];
    return count;
}

int has_legal_move(const Board *b) {
    int king = king_square(b, b->turn);
    if (king != NO_SQUARE) { /* a safe king step is the usual answer, and the cheapest */
        bb_t occupied = b->occupied & ~BB(king);
        for (bb_t steps = KING_TABLE[king] & ~b->color[b->turn]; steps; steps &= steps - 1)
            if (!attackers_mask(b, !b->turn, lsb(steps), occupied)) return 1;
    }
    Move moves[MAX_MOVES];
    return legal_moves(b, moves) > 0;
}

int is_legal_pseudo(const Board *b, Move m) {
    Board after;
    push(b, m, &after);
    int king = king_square(&after, b->turn);
    return king == NO_SQUARE || !attackers_mask(&after, !b->turn, king, after.occupied);
}

static bb_t piece_attacks(int type, int color, int sq, bb_t occupied) {
    switch (type) {
    case PAWN: return PAWN_TABLE[color][sq];
    case KNIGHT: return KNIGHT_TABLE[sq];
    case KING: return KING_TABLE[sq];
    case BISHOP: return diagonal_attacks(sq, occupied);
    case ROOK: return straight_attacks(sq, occupied);
    default: return diagonal_attacks(sq, occupied) | straight_attacks(sq, occupied);
    }
}

/* python-chess gives_check for a legal move: whether the other king is in check after it. */
int gives_check(const Board *b, Move m) {
    int king = king_square(b, !b->turn);
    if (king == NO_SQUARE) return 0;
    if (is_castling(b, m) || is_en_passant(b, m)) {
        Board after;
        push(b, m, &after);
        return is_check(&after);
    }
    bb_t origin = BB(m.from), to = BB(m.to);
    bb_t occupied = (b->occupied & ~origin) | to;
    int type = m.promotion ? m.promotion : piece_type_at(b, m.from);
    if (piece_attacks(type, b->turn, m.to, occupied) & BB(king)) return 1;
    return (attackers_mask(b, b->turn, king, occupied) & ~origin & ~to) != 0;
}
