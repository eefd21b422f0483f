"""The slow tier: the tests that need a Stockfish game, torch training or an engine (or bot) run
as a process, or that time something for seconds. tests/conftest.py marks them `slow`.

    bash tests/run.sh -m "not slow"   # the fast tier, after each change (a few minutes)
    bash tests/run.sh                 # everything, as CI runs it

tests/run.sh runs a tier on two workers (pytest-xdist), then the SERIAL tests below alone.

Each entry is a test (`path::name`, every parametrisation of it) or a whole module (`path`),
under the reason it is slow. A test that starts `oneply uci` through the `raw_engine` fixture
is slow without an entry. An entry that names no collected test fails the run, so a rename
cannot drop a slow test into the fast tier unnoticed. Tests already decorated with
`@pytest.mark.slow` in their module stay so; they need no entry.
"""

from __future__ import annotations

#: fixtures whose tests start an engine as a process
ENGINE_PROCESS_FIXTURES = frozenset({"raw_engine"})

STOCKFISH_GAMES = (
    "tests/arena/test_match.py::test_cli_stockfish_vs_stockfish",
    "tests/arena/test_match.py::test_oneply_uci_vs_stockfish_skill_0",
    "tests/arena/test_match.py::test_misbehaving_engine_loses",
    "tests/arena/test_match.py::test_misbehaving_engine_restarted_every_game",
    "tests/arena/test_match.py::test_sprt_stops_early",
    "tests/arena/test_match.py::test_sigterm_stops_engines_even_a_hung_one",
    "tests/arena/test_opponents.py::test_seed_option_over_uci_changes_the_game",
    "tests/arena/test_opponents.py::test_match_accepts_builtin_names",
    "tests/arena/test_strength_search.py::test_strength_with_search_end_to_end",
    "tests/arena/test_strength_search.py::test_nodes_curve_end_to_end",
    "tests/bot/test_game_loop.py::test_full_game_to_checkmate_saves_pgn",
    "tests/bot/test_game_loop.py::test_full_game_with_search_on_a_bullet_clock_never_loses_on_time",
    # `train generate`: Stockfish plays and labels games
    "tests/training/test_generate.py",
    "tests/training/test_learner.py::test_generate_records_its_learner_and_resumes_only_with_the_same_file",
    "tests/training/test_best_labels.py::test_best_only_shards_hold_what_score_best_says",
    "tests/training/test_best_labels.py::test_the_same_games_for_any_worker_count",
    "tests/training/test_best_labels.py::test_labels_all_is_the_default_and_records_nothing_new",
    "tests/training/test_best_labels.py::test_a_directory_keeps_one_kind_of_label",
    "tests/training/test_best_labels.py::test_sv_and_bc_train_on_best_only_shards",
    "tests/training/test_best_labels.py::test_av_refuses_best_only_shards_and_a_mix",
    "tests/training/test_best_labels.py::test_inspect_says_best_and_lists_the_one_scored_move",
    "tests/training/test_campaign.py::test_generate_records_the_labelling_cpu_of_every_shard",
    "tests/training/test_annotate.py::test_pgn_games_are_streamed_deduplicated_excluded_and_resumed",
    "tests/training/test_annotate.py::test_every_source_is_a_train_step_and_pgn_equals_annotate",
    "tests/training/test_annotate.py::test_values_do_not_depend_on_workers_or_chunks",
    "tests/training/test_positions.py::test_sigterm_stops_the_workers_and_their_stockfish",
    "tests/training/test_positions.py::test_generate_resume_unique_and_excluded",
)

TORCH_TRAINING = (
    "tests/training/test_ablation.py::test_ablation_trains_measures_writes_the_table_and_resumes",
    "tests/training/test_ablation.py::test_cpu_hours_give_each_row_the_positions_its_budget_pays_for",
    "tests/training/test_ablation.py::test_each_row_learns_from_the_labels_it_needs",
    "tests/training/test_ablation_geometry.py::test_each_row_trains_a_step_and_exports_with_parity",
    "tests/training/test_ablation_geometry.py::test_a_round3_row_runs_through_the_ablation",
    "tests/training/test_accumulate.py::test_init_from_checkpoint_is_bitwise_its_exported_weights",
    "tests/training/test_accumulate.py::test_layers_grow_a_source_that_then_scores_as_before_and_learns",
    "tests/training/test_accumulate.py::test_follow_picks_up_a_shard_written_mid_run",
    "tests/training/test_accumulate.py::test_a_resumed_follow_run_keeps_its_recorded_shards",
    "tests/training/test_accumulate.py::test_a_run_resumes_from_data_that_moved",
    "tests/training/test_accumulate.py::test_follow_waits_for_a_directory_that_does_not_exist_yet",
    "tests/training/test_accumulate.py::test_validation_and_puzzle_check_land_in_metrics_and_plot",
    "tests/training/test_accumulate.py::test_a_checkpoint_with_fused_adamw_resumes_on_the_cpu",
    "tests/training/test_batch_loader.py::test_a_run_with_loader_workers_trains_the_same_weights",
    "tests/training/test_batch_loader.py::test_workers_make_the_batches_the_trainer_would_in_order_and_after_a_restart",
    "tests/training/test_campaign.py::test_start_resumes_from_the_committed_weights_else_the_bundled_model",
    "tests/training/test_campaign.py::test_a_new_lineage_starts_from_init_and_reads_stock_beside_the_fresh_data",
    "tests/training/test_campaign.py::test_save_exports_the_run_and_writes_the_ledger_and_curve",
    "tests/training/test_campaign.py::test_two_sessions_on_one_day_get_rows_of_their_own",
    "tests/training/test_campaign.py::test_save_adopts_a_fork_with_the_labelling_of_its_own_data",
    "tests/training/test_campaign.py::test_save_pairs_the_fork_with_the_campaign_and_can_adopt_it",
    "tests/training/test_data_feed.py",
    "tests/training/test_deadline.py::test_a_run_with_hours_ends_at_the_deadline_on_a_cosine_sized_to_it",
    "tests/training/test_fit.py::test_a_short_run_learns_and_writes_checkpoint_metrics_and_plot",
    "tests/training/test_fit.py::test_per_move_layout_trains",
    "tests/training/test_fit.py::test_resume_refuses_a_checkpoint_trained_differently",
    "tests/training/test_fit.py::test_a_run_saves_by_the_clock_between_step_saves_and_resumes_exactly",
    "tests/training/test_fit.py::test_benchmark_runs_per_move_in_micro_batches_of_4_unless_told",
    "tests/training/test_predictors.py::test_each_predictor_trains_and_its_loss_falls",
    "tests/engine/test_checks.py::test_a_warm_start_that_adds_the_checks_keeps_v9_and_its_file_reads_them",
    "tests/engine/test_features.py::test_a_warm_start_that_adds_the_threats_keeps_v8_and_its_file_reads_them",
    "tests/engine/test_features.py::test_a_warm_start_that_adds_square_channels_keeps_its_source_and_its_file_reads_them",
)

#: `oneply uci`, `oneply bot` or a command that loads a model, run as a process (Python start,
#: imports and a model load: seconds each, more on a loaded machine)
ENGINE_PROCESSES = (
    "tests/engine/test_uci.py::test_missing_model_says_what_to_do_and_still_moves",
    "tests/engine/test_uci.py::test_banner_goes_to_stderr_only",
    "tests/engine/test_uci.py::test_python_chess_client_gets_a_move_for_a_malformed_go",
    "tests/engine/test_uci.py::test_unknown_subcommand_exits_2_naming_it",
    "tests/engine/test_uci.py::test_inference_failure_plays_the_shared_fallback",
    "tests/engine/test_uci_edges.py",
    "tests/engine/test_search.py::test_go_nodes_bounds_the_search_and_info_reports_it",
    "tests/engine/test_search.py::test_option_search_nodes_caps_a_clocked_search",
    "tests/engine/test_search.py::test_search_off_answers_exactly_as_the_searchless_engine",
    "tests/engine/test_search.py::test_stop_ends_an_infinite_search_at_once_with_its_best_move",
    "tests/engine/test_search.py::test_uci_syzygy_path_feeds_the_search_and_a_bad_path_is_a_clear_error",
    "tests/engine/test_predictor_play.py::test_sv_and_bc_files_play_a_legal_game_through_oneply_uci",
    "tests/engine/test_predictor_play.py::test_analyse_shows_every_legal_move_of_sv_and_bc_files",
    "tests/engine/test_predictor_play.py::test_uci_search_on_a_bc_file_says_so_and_plays_the_policy",
    "tests/engine/test_predictor_play.py::test_analyse_labels_bc_scores_as_policy_and_refuses_search",
    "tests/engine/test_cli_tools.py::test_analyse_json_lists_every_legal_move_sorted",
    "tests/engine/test_cli_tools.py::test_analyse_table_and_moves_and_errors",
    "tests/engine/test_cli_tools.py::test_analyse_search_shows_the_trees_view_beside_the_one_pass",
    "tests/engine/test_cli_tools.py::test_analyse_search_table_finds_the_mate_and_refuses_bad_counts",
    "tests/engine/test_cli_tools.py::test_bench_json_reports_all_variants",
    "tests/engine/test_cli_tools.py::test_bench_on_two_threads_times_the_layout_and_the_path_the_default_does_not_run",
    "tests/engine/test_cli_tools.py::test_bench_table_shows_the_search_row_unless_turned_off",
    "tests/engine/test_cli_tools.py::test_analyse_of_a_won_position_exits_promptly",
    "tests/engine/test_cli_tools.py::test_analyse_names_an_illegal_move_as_such",
    "tests/engine/test_cli_tools.py::test_bench_times_each_fact_group_the_model_reads",
    "tests/bot/test_shutdown.py",
    "tests/training/test_soup.py::test_the_command_writes_a_file_the_engine_serves_and_says_what_it_holds",
    "tests/arena/test_nodes_chain.py::test_real_matches_form_the_chain",
)

#: tests that time themselves against the wall clock with margins (a clock budget kept, a stop
#: answered within 250 ms, a bullet game not lost on time) that a second busy worker could eat:
#: tests/run.sh runs them alone, after the parallel pass (conftest's --serial)
SERIAL = (
    "tests/engine/test_search_clock.py",
    "tests/engine/test_search.py::test_time_budget_holds_with_a_slow_scorer",
    "tests/engine/test_search.py::test_stop_ends_an_infinite_search_at_once_with_its_best_move",
    "tests/engine/test_uci.py::test_full_game_against_stockfish_with_clock",
    "tests/engine/test_uci.py::test_movetime_is_respected_and_info_is_reported",
    "tests/engine/test_policy.py::test_bestmove_inside_the_budget_when_stockfish_hangs",
    "tests/engine/test_policy.py::test_fallback_is_skipped_when_the_clock_is_nearly_out",
    "tests/arena/test_match.py::test_misbehaving_engine_loses",
    "tests/bot/test_game_loop.py::test_full_game_with_search_on_a_bullet_clock_never_loses_on_time",
    "tests/bot/test_shutdown.py::test_second_sigterm_exits_at_once",
)

SLOW = {
    "a Stockfish game": STOCKFISH_GAMES,
    "torch training": TORCH_TRAINING,
    "an engine run as a process": ENGINE_PROCESSES,
}
