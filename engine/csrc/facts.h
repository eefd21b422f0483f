/* The facts of engine/features.py (model format 4), computed on a Board (board.h).
 *
 * engine/features.py, engine/exchange.py, engine/checks.py and engine/structure.py are the
 * specification; every function here names the Python function it follows. The channel order
 * is the one those modules declare (SQUARE_FACTS, MOVE_FACTS); engine/native.py checks the
 * names below against them at import, so a reordering there turns the extension off instead of
 * mislabelling the model's inputs.
 */
#ifndef ONEPLY_FACTS_H
#define ONEPLY_FACTS_H

#include "board.h"

enum SquareFact {
    SF_OWN_ATTACKERS, SF_ENEMY_ATTACKERS, SF_PINNED, SF_EN_PRISE, SF_ENEMY_CHECK,
    SF_SAFE_MOVES, SF_KING_FLIGHTS, SF_PASSED, SQUARE_FACT_COUNT
};
enum MoveFact {
    MF_CAPTURED, MF_CHECK, MF_DEST_ATTACKERS, MF_DEST_DEFENDERS, MF_EXCHANGE, MF_THREAT,
    MF_THREATENS, MF_TARGETS, MF_REPLY_CHECK, MF_NEXT_CHECK, MOVE_FACT_COUNT
};
extern const char *const SQUARE_FACT_NAMES[SQUARE_FACT_COUNT];
extern const char *const MOVE_FACT_NAMES[MOVE_FACT_COUNT];

/* the optional groups of engine/features.GROUPS (the others are always computed) */
enum Group {
    G_EXCHANGE = 1 << 0, G_THREATS = 1 << 1, G_CHECKS = 1 << 2, G_FORKS = 1 << 3,
    G_REPLIES = 1 << 4, G_MATE_THREATS = 1 << 5, G_MOBILITY = 1 << 6, G_KINGS = 1 << 7,
    G_PASSERS = 1 << 8
};
extern const char *const GROUP_NAMES[9];

void facts_init(void);
void square_facts(const Board *b, int groups, int64_t *out /* [64][SQUARE_FACT_COUNT] */);
void move_facts(const Board *b, const Move *moves, int count, int groups,
                uint8_t *out /* [count][MOVE_FACT_COUNT] */);

#endif
