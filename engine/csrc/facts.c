/* The facts of engine/features.py in C (facts.h): the static exchange (engine/exchange.py),
 * the checks (engine/checks.py, as the brute force its tests hold it to), the king's room and
 * the passed pawns (engine/structure.py), and the two tables of engine/features.py. */
#include "facts.h"

const char *const SQUARE_FACT_NAMES[SQUARE_FACT_COUNT] = {
    "own_attackers", "enemy_attackers", "pinned", "en_prise",
    "enemy_check", "safe_moves", "king_flights", "passed"};
const char *const MOVE_FACT_NAMES[MOVE_FACT_COUNT] = {
    "captured", "check", "dest_attackers", "dest_defenders", "exchange",
    "threat", "threatens", "targets", "reply_check", "next_check"};
const char *const GROUP_NAMES[9] = {"exchange", "threats", "checks", "forks", "replies",
                                    "mate_threats", "mobility", "kings", "passers"};

static const int PIECE_VALUE[7] = {0, 1, 3, 3, 5, 9, 0};
enum { NO_CHECK = 0, CHECK = 1, MATE = 2 };

static bb_t STRAIGHT_LINES[64][2], DIAGONAL_LINES[64][2];
static int DIAGONAL_COUNT[64];
static bb_t REACH[64], FRONT_SPAN[2][64];

void facts_init(void) {
    for (int sq = 0; sq < 64; sq++) {
        STRAIGHT_LINES[sq][0] = BB_RANK(RANK_OF(sq));
        STRAIGHT_LINES[sq][1] = BB_FILE(FILE_OF(sq));
        DIAGONAL_COUNT[sq] = 0;
        bb_t diagonals = diagonal_attacks(sq, 0), seen = 0;
        for (bb_t rest = diagonals; rest; rest &= rest - 1) { /* one line per diagonal */
            bb_t line = line_through(sq, lsb(rest));
            if (line & seen) continue;
            seen |= line & ~BB(sq);
            DIAGONAL_LINES[sq][DIAGONAL_COUNT[sq]++] = line;
        }
        REACH[sq] = STRAIGHT_LINES[sq][0] | STRAIGHT_LINES[sq][1] | knight_attacks(sq) |
                    king_attacks(sq);
        for (int i = 0; i < DIAGONAL_COUNT[sq]; i++) REACH[sq] |= DIAGONAL_LINES[sq][i];
        for (int color = BLACK; color <= WHITE; color++) {
            bb_t span = 0;
            int step = color == WHITE ? 1 : -1;
            for (int r = RANK_OF(sq) + step; r >= 0 && r < 8; r += step)
                for (int f = FILE_OF(sq) - 1; f <= FILE_OF(sq) + 1; f++)
                    if (f >= 0 && f < 8) span |= BB(r * 8 + f);
            FRONT_SPAN[color][sq] = span;
        }
    }
}

/* ------------------------------------------------------------ static exchange (exchange.py) */

static bb_t attackers_with(const Board *b, int color, int sq, bb_t occupied) {
    return attackers_mask(b, color, sq, occupied) & occupied;
}

static int cheapest(const Board *b, bb_t attackers, int *type) {
    for (int t = PAWN; t <= KING; t++) {
        bb_t mask = attackers & b->pieces[t];
        if (mask) {
            *type = t;
            return lsb(mask);
        }
    }
    *type = NONE;
    return NO_SQUARE;
}

/* exchange_gain: `first` is side's attackers on sq when the caller has them (0: compute) */
static int exchange_gain(const Board *b, int sq, int side, bb_t occupied, int target,
                         bb_t first) {
    int gains[40], count = 0;
    for (;;) {
        bb_t attackers = first ? first : attackers_with(b, side, sq, occupied);
        first = 0;
        if (!attackers) break;
        int type, origin = cheapest(b, attackers, &type);
        if (origin == NO_SQUARE) break;
        bb_t left = occupied & ~BB(origin);
        if (type == KING && attackers_with(b, !side, sq, left)) break;
        gains[count++] = target;
        target = PIECE_VALUE[type];
        occupied = left;
        side = !side;
        if (count == 40) break;
    }
    int result = 0;
    for (int i = count - 1; i >= 0; i--) result = gains[i] - result > 0 ? gains[i] - result : 0;
    return result;
}

static int move_exchange(const Board *b, Move m) {
    if (is_castling(b, m)) return 0;
    int moved = piece_type_at(b, m.from), to = m.to, captured;
    bb_t occupied = (b->occupied & ~BB(m.from)) | BB(to);
    if (is_en_passant(b, m)) {
        captured = PAWN;
        occupied &= ~BB(b->turn == WHITE ? to - 8 : to + 8);
    } else {
        captured = piece_type_at(b, to);
    }
    int on_square = m.promotion ? m.promotion : moved;
    int gain = PIECE_VALUE[captured] + PIECE_VALUE[on_square] - PIECE_VALUE[moved];
    return gain - exchange_gain(b, to, !b->turn, occupied, PIECE_VALUE[on_square], 0);
}

static int en_prise(const Board *b, int sq) {
    int type = piece_type_at(b, sq);
    if (type == NONE || type == KING) return 0;
    int color = (b->color[WHITE] & BB(sq)) ? WHITE : BLACK;
    return exchange_gain(b, sq, !color, b->occupied, PIECE_VALUE[type], 0) > 0;
}

static int safe_moves(const Board *b, int sq, int enough) {
    int type = piece_type_at(b, sq), color = (b->color[WHITE] & BB(sq)) ? WHITE : BLACK;
    int value = PIECE_VALUE[type], count = 0;
    bb_t left = b->occupied & ~BB(sq);
    for (bb_t targets = attacks_mask(b, sq) & ~b->color[color]; targets; targets &= targets - 1) {
        int to = lsb(targets), taken = PIECE_VALUE[piece_type_at(b, to)];
        if (taken >= value ||
            taken >= exchange_gain(b, to, !color, left | BB(to), value, 0)) {
            if (++count >= enough) break;
        }
    }
    return count;
}

/* The exchanges on `color`'s attacked pieces before a move (exchange.Standing). */
typedef struct {
    bb_t squares;
    int gains[64];
} Standing;

static void standing_of(const Board *b, int color, Standing *s) {
    s->squares = 0;
    for (bb_t pieces = b->color[color] & ~b->pieces[KING]; pieces; pieces &= pieces - 1) {
        int sq = lsb(pieces);
        bb_t attackers = attackers_with(b, !color, sq, b->occupied);
        if (!attackers) continue;
        s->squares |= BB(sq);
        s->gains[sq] = exchange_gain(b, sq, !color, b->occupied,
                                     PIECE_VALUE[piece_type_at(b, sq)], attackers);
    }
}

/* exposed(): the best gain and how many gains are positive; `known`, `changed`: reuse */
static int exposed(const Board *b, int color, int skip, bb_t among, const Standing *known,
                   bb_t changed, int *winning) {
    bb_t pieces = b->color[color] & ~b->pieces[KING] & among;
    if (skip != NO_SQUARE) pieces &= ~BB(skip);
    int best = 0;
    *winning = 0;
    for (; pieces; pieces &= pieces - 1) {
        int sq = lsb(pieces), gain;
        if (known && (known->squares & BB(sq)) && !(REACH[sq] & changed)) {
            gain = known->gains[sq];
        } else {
            int type = piece_type_at(b, sq);
            bb_t attackers = attackers_with(b, !color, sq, b->occupied);
            if (type == NONE || !attackers) continue;
            gain = exchange_gain(b, sq, !color, b->occupied, PIECE_VALUE[type], attackers);
        }
        if (gain > best) best = gain;
        if (gain > 0) ++*winning;
    }
    return best;
}

static bb_t opened_by(const Board *b, Move m, int color) {
    int emptied[2] = {m.from, NO_SQUARE};
    if (is_castling(b, m)) {
        int rook_file = FILE_OF(m.to) > FILE_OF(m.from) ? 7 : 0;
        emptied[1] = RANK_OF(m.from) * 8 + rook_file;
    } else if (is_en_passant(b, m)) {
        emptied[1] = b->turn == WHITE ? m.to - 8 : m.to + 8;
    }
    bb_t own = b->color[color];
    bb_t rooks = (b->pieces[ROOK] | b->pieces[QUEEN]) & own;
    bb_t bishops = (b->pieces[BISHOP] | b->pieces[QUEEN]) & own;
    bb_t lines = 0;
    for (int i = 0; i < 2 && emptied[i] != NO_SQUARE; i++) {
        int sq = emptied[i];
        for (int j = 0; j < 2; j++)
            if (STRAIGHT_LINES[sq][j] & rooks) lines |= STRAIGHT_LINES[sq][j];
        for (int j = 0; j < DIAGONAL_COUNT[sq]; j++)
            if (DIAGONAL_LINES[sq][j] & bishops) lines |= DIAGONAL_LINES[sq][j];
    }
    return lines;
}

/* ------------------------------------------------------------------------ checks (checks.py) */

/* The side to move's pseudo-legal moves that may give check (checks.checking_moves): a piece
 * that blocks one of its own sliders from the enemy king, a pawn about to promote, castling
 * and en passant may check in ways its destination does not show, so all their moves are
 * candidates; any other piece checks only from a square its type attacks the king from along
 * today's lines (the king is not in check before the move, so no line through the origin can
 * open onto it). */
static int check_candidates(const Board *b, int king, Move *out) {
    MoveList list = {out, 0};
    int turn = b->turn;
    bb_t own = b->color[turn], occupied = b->occupied, free = ~own;
    bb_t straight = (b->pieces[ROOK] | b->pieces[QUEEN]) & own;
    bb_t diagonal = (b->pieces[BISHOP] | b->pieces[QUEEN]) & own;
    bb_t snipers = (straight_attacks(king, 0) & straight) | (diagonal_attacks(king, 0) & diagonal);
    bb_t movers = b->pieces[PAWN] & own & BB_RANK(turn == WHITE ? 6 : 1);
    for (; snipers; snipers &= snipers - 1) {
        bb_t inside = between(king, lsb(snipers)) & occupied;
        if (popcount(inside) == 1 && (inside & own)) movers |= inside;
    }
    if (movers) pseudo_legal_moves(b, movers, BB_ALL, &list);
    bb_t diagonal_checks = diagonal_attacks(king, occupied) & free;
    bb_t straight_checks = straight_attacks(king, occupied) & free;
    bb_t rest = own & ~movers;
    bb_t knights = b->pieces[KNIGHT] & rest, bishops = b->pieces[BISHOP] & rest;
    bb_t rooks = b->pieces[ROOK] & rest, queens = b->pieces[QUEEN] & rest;
    if (knights) pseudo_legal_moves(b, knights, knight_attacks(king) & free, &list);
    if (bishops && diagonal_checks) pseudo_legal_moves(b, bishops, diagonal_checks, &list);
    if (rooks && straight_checks) pseudo_legal_moves(b, rooks, straight_checks, &list);
    if (queens && (diagonal_checks | straight_checks))
        pseudo_legal_moves(b, queens, diagonal_checks | straight_checks, &list);
    bb_t pawns = b->pieces[PAWN] & rest;
    if (pawns) {
        pseudo_legal_moves(b, pawns, pawn_attacks(!turn, king), &list);
        pseudo_legal_ep(b, pawns, BB_ALL, &list);
    }
    if (b->pieces[KING] & rest) castling_moves(b, rest, BB_ALL, &list);
    return list.count;
}

/* reply_check: MATE if the side to move can mate at once, CHECK if it can give check */
static int reply_check(const Board *b) {
    int king = king_square(b, !b->turn);
    if (king == NO_SQUARE) return NO_CHECK;
    Move moves[MAX_MOVES];
    int count = check_candidates(b, king, moves), found = NO_CHECK;
    for (int i = 0; i < count; i++) {
        if (!gives_check(b, moves[i]) || !is_legal_pseudo(b, moves[i])) continue;
        Board after;
        push(b, moves[i], &after);
        if (!has_legal_move(&after)) return MATE;
        found = CHECK;
    }
    return found;
}

static int next_check(const Board *b) {
    if (is_check(b)) return NO_CHECK;
    Board passed = *b;
    passed.turn = !b->turn;
    passed.ep = NO_SQUARE;
    return reply_check(&passed);
}

static void enemy_checks(const Board *b, int64_t *out) {
    if (king_square(b, b->turn) == NO_SQUARE || is_check(b)) return;
    Board passed;
    push_null(b, &passed);
    Move moves[MAX_MOVES];
    int count = check_candidates(&passed, king_square(b, b->turn), moves);
    for (int i = 0; i < count; i++) {
        int64_t *cell = &out[moves[i].to * SQUARE_FACT_COUNT + SF_ENEMY_CHECK];
        if (*cell == MATE || !gives_check(&passed, moves[i])) continue;
        if (!is_legal_pseudo(&passed, moves[i])) continue;
        Board after;
        push(&passed, moves[i], &after);
        *cell = has_legal_move(&after) ? CHECK : MATE;
    }
}

/* ------------------------------------------------------------------ structure (structure.py) */

static int king_flights(const Board *b, int color, int enough) {
    int king = king_square(b, color);
    if (king == NO_SQUARE) return 0;
    bb_t occupied = b->occupied & ~BB(king);
    int count = 0;
    for (bb_t steps = king_attacks(king) & ~b->color[color]; steps; steps &= steps - 1)
        if (!attackers_mask(b, !color, lsb(steps), occupied) && ++count >= enough) break;
    return count;
}

static int distance(int a, int b) {
    int files = FILE_OF(a) - FILE_OF(b), ranks = RANK_OF(a) - RANK_OF(b);
    files = files < 0 ? -files : files;
    ranks = ranks < 0 ? -ranks : ranks;
    return files > ranks ? files : ranks;
}

static int passer(const Board *b, int sq) {
    int color = (b->color[WHITE] & BB(sq)) ? WHITE : BLACK;
    if (FRONT_SPAN[color][sq] & b->pieces[PAWN] & b->color[!color]) return 0;
    if (FRONT_SPAN[color][sq] & BB_FILE(FILE_OF(sq)) & b->occupied) return 1;
    int king = king_square(b, !color);
    if (king == NO_SQUARE) return 3;
    int rank = color == WHITE ? RANK_OF(sq) : 7 - RANK_OF(sq);
    int steps = 7 - rank - (rank == 1 ? 1 : 0);
    int queening = (color == WHITE ? 56 : 0) + FILE_OF(sq);
    int reach = distance(king, queening) - (b->turn == color ? 0 : 1);
    return reach > steps ? 3 : 2;
}

/* --------------------------------------------------------------------------- features.py */

static int bucket(int pawns, const int *edges, int count) {
    int i = 0;
    while (i < count && edges[i] < pawns) i++;
    return i;
}
static const int EXCHANGE_EDGES[6] = {-5, -2, -1, 0, 1, 4};
static const int THREAT_EDGES[5] = {0, 1, 2, 4, 6};
#define EXCHANGE_BUCKET(p) bucket((p), EXCHANGE_EDGES, 6)
#define THREAT_BUCKET(p) bucket((p), THREAT_EDGES, 5)
#define CLAMP3(n) ((n) < 3 ? (n) : 3)

void square_facts(const Board *b, int groups, int64_t *out) {
    int us = b->turn;
    int counts[2][64] = {{0}};
    memset(out, 0, sizeof(int64_t) * 64 * SQUARE_FACT_COUNT);
    for (int color = BLACK; color <= WHITE; color++)
        for (bb_t pieces = b->color[color]; pieces; pieces &= pieces - 1)
            for (bb_t hit = attacks_mask(b, lsb(pieces)); hit; hit &= hit - 1)
                counts[color][lsb(hit)]++;
    for (int sq = 0; sq < 64; sq++) {
        out[sq * SQUARE_FACT_COUNT + SF_OWN_ATTACKERS] = CLAMP3(counts[us][sq]);
        out[sq * SQUARE_FACT_COUNT + SF_ENEMY_ATTACKERS] = CLAMP3(counts[!us][sq]);
    }
    for (int side = 0; side < 2; side++) {
        int color = side == 0 ? us : !us, flag = side + 1;
        for (bb_t pieces = b->color[color]; pieces; pieces &= pieces - 1) {
            int sq = lsb(pieces);
            if (is_pinned(b, color, sq)) out[sq * SQUARE_FACT_COUNT + SF_PINNED] = flag;
            if ((groups & G_EXCHANGE) && counts[!color][sq] && en_prise(b, sq))
                out[sq * SQUARE_FACT_COUNT + SF_EN_PRISE] = flag;
        }
    }
    if (groups & G_CHECKS) enemy_checks(b, out);
    if (groups & G_MOBILITY) {
        bb_t pieces = b->pieces[KNIGHT] | b->pieces[BISHOP] | b->pieces[ROOK] | b->pieces[QUEEN];
        for (; pieces; pieces &= pieces - 1)
            out[lsb(pieces) * SQUARE_FACT_COUNT + SF_SAFE_MOVES] = 1 + safe_moves(b, lsb(pieces), 3);
    }
    if (groups & G_KINGS) {
        for (int color = WHITE; color >= BLACK; color--) {
            int king = king_square(b, color);
            if (king != NO_SQUARE)
                out[king * SQUARE_FACT_COUNT + SF_KING_FLIGHTS] = 1 + king_flights(b, color, 3);
        }
    }
    if (groups & G_PASSERS)
        for (bb_t pawns = b->pieces[PAWN]; pawns; pawns &= pawns - 1)
            out[lsb(pawns) * SQUARE_FACT_COUNT + SF_PASSED] = passer(b, lsb(pawns));
}

/* features._attacked: the squares of `color`'s pieces that the other side attacks */
static bb_t attacked_pieces(const Board *b, int color) {
    bb_t mask = 0;
    for (bb_t pieces = b->color[color]; pieces; pieces &= pieces - 1)
        if (attackers_mask(b, !color, lsb(pieces), b->occupied)) mask |= BB(lsb(pieces));
    return mask;
}

static void one_move(const Board *b, Move m, int groups, const Standing *standing,
                     bb_t targets, uint8_t *row) {
    int us = b->turn, to = m.to, winning;
    row[MF_CAPTURED] = is_en_passant(b, m) ? PAWN : piece_type_at(b, to);
    if (groups & G_EXCHANGE) row[MF_EXCHANGE] = EXCHANGE_BUCKET(move_exchange(b, m));
    bb_t suspects = (groups & G_THREATS) ? standing->squares | opened_by(b, m, !us) : 0;
    bb_t lines = 0;
    if (groups & G_FORKS) lines = (is_castling(b, m) ? BB_ALL : opened_by(b, m, us)) & ~targets;
    Board after;
    push(b, m, &after);
    row[MF_CHECK] = is_check(&after);
    row[MF_DEST_ATTACKERS] = CLAMP3(popcount(attackers_mask(&after, !us, to, after.occupied)));
    row[MF_DEST_DEFENDERS] = CLAMP3(popcount(attackers_mask(&after, us, to, after.occupied)));
    if (groups & G_THREATS) {
        bb_t changed = (b->color[WHITE] ^ after.color[WHITE]) | (b->color[BLACK] ^ after.color[BLACK]);
        row[MF_THREAT] = THREAT_BUCKET(exposed(&after, us, to, suspects, standing, changed, &winning));
    }
    if (groups & G_FORKS) {
        bb_t among = lines | attacks_mask(&after, to);
        int best = exposed(&after, after.turn, NO_SQUARE, among, NULL, 0, &winning);
        row[MF_THREATENS] = THREAT_BUCKET(best);
        row[MF_TARGETS] = winning < 2 ? winning : 2;
    }
    if (groups & G_REPLIES) row[MF_REPLY_CHECK] = reply_check(&after);
    if (groups & G_MATE_THREATS) row[MF_NEXT_CHECK] = next_check(&after);
}

void move_facts(const Board *b, const Move *moves, int count, int groups, uint8_t *out) {
    Standing standing;
    if (groups & G_THREATS) standing_of(b, b->turn, &standing);
    bb_t targets = (groups & G_FORKS) ? attacked_pieces(b, !b->turn) : 0;
    memset(out, 0, (size_t)count * MOVE_FACT_COUNT);
    for (int i = 0; i < count; i++)
        one_move(b, moves[i], groups, &standing, targets, out + i * MOVE_FACT_COUNT);
}
