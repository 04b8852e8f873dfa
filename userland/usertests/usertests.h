/*
 * usertests' own declarations: the test table and the helpers tests use.
 * A test is a function run in a child process; it reports problems with
 * t_fail (the case fails, the test goes on) and may end with
 * exit(T_SKIPPED) when the system lacks what it needs.
 *
 *     static void pipe_round_trip(void) { ... if (got != 5) t_fail("got %d", got); }
 *     {"pipe_round_trip", pipe_round_trip, HANG_GUARD_MS},
 */
#ifndef USERTESTS_USERTESTS_H
#define USERTESTS_USERTESTS_H

#include <stdbool.h>

/* Linux's errno numbers, as ms_syscall returns them negated. */
#define L_ENOENT  2
#define L_ENOEXEC 8
#define L_EBADF   9
#define L_ECHILD  10
#define L_EAGAIN  11
#define L_ENOMEM  12
#define L_EFAULT  14
#define L_EBUSY   16
#define L_EINVAL  22
#define L_ENFILE  23
#define L_ENOSPC  28
#define L_EPIPE   32
#define L_ENOSYS  38

#define T_SKIPPED 77 /* a test's exit status: it could not run here */

/* How long a case may run before it is taken for a hang, killed and
 * reported as one: far beyond what any case needs even on a busy host, so
 * it never decides a result, only ends a case that would never end. */
#define HANG_GUARD_MS      120000
#define SLOW_HANG_GUARD_MS 240000 /* cases that do much work (tracing, big directories) */

struct user_test {
	const char *name;
	void (*run)(void);
	long hang_guard_ms; /* HANG_GUARD_MS, or SLOW_HANG_GUARD_MS */
};

extern const struct user_test user_tests[]; /* ends with a NULL name */

/* Records a failure (printed as a KTAP diagnostic); the test goes on. */
void t_fail(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* Prints a diagnostic that is not a failure. */
void t_note(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* How many failures this test has recorded. */
int t_failed(void);
/* Runs body(argument) in a child; returns its wait status, or -1 (fork or
 * wait failed: recorded as a failure). */
int t_run_child(void (*body)(void *), void *argument);
/* Runs body in a child and fails unless the child is killed by signal sig. */
void t_expect_signal(const char *what, void (*body)(void *), void *argument, int sig);
/* Calls itself, 1 KiB of stack a call, until the stack runs out (a fault). */
int t_recurse_until_the_stack_ends(int depth);
/* Pins the caller (and so the children it forks after) to the first CPU it
 * may run on; *previous gets what it may run on now, to give back with
 * sched_setaffinity.  Returns the CPU, or -1 (recorded as a failure). */
int t_pin_to_one_cpu(void *previous, size_t size);
/* The path this program was started by (argv[0]), for a case that execs it
 * again: /bin/usertests in the OS, the build's binary on the host. */
extern const char *t_program_path;
/* Monotonic milliseconds, or -1 without a clock. */
long t_now_ms(void);
void t_sleep_ms(long ms);

/* trace.c: marks into the trace stream */
void trace_marks_reach_the_stream(void);
void trace_mark_refuses_bad_input(void);
void uscope_traces_a_program_by_name(void);
void uscope_follows_a_fork_and_stops_at_a_renamed_exec(void);
void uscope_a_user_traces_only_their_own_processes(void);
void uscope_refuses_bad_requests(void);
void uscope_unwinds_code_without_frame_pointers(void);
void uscope_same_registers_other_caller(void);
void uscope_stack_on_unmapped_memory_is_not_remembered(void);
void uscope_stacks_follow_the_events_named(void);
void uscope_stacks_only_trace_holds_nothing_else(void);
void uscope_stacks_at_joinpoints_that_cannot_sleep(void);
/* The caller's mapped user pages, as ps sees them; -1 when not found. */
long t_own_pages(void);
/* Waits until process pid runs the program name (exec'd it): true, or false
 * when it ended or is gone first. */
bool t_wait_until_named(int pid, const char *name);
/* Waits until process pid waits on channel (ms_getprocs' wait channel:
 * "pipe", "nanosleep", ...): true, or false when it is gone first. */
bool t_wait_until_waiting_on(int pid, const char *channel);
void ps_shows_wait_channels(void);
/* hangup.c: orphans, orphaned groups, the console's hang-up */
void orphans_go_to_init(void);
void orphaned_group_hears_sighup(void);
void console_hangup_reaches_foreground(void);
void console_cooked_after_hangup(void);
/* signals.c: handlers, the mask, rt_sigreturn (Linux's ABI) */
void sigaction_sets_and_reports_handlers(void);
void a_handler_gets_linux_frame(void);
void registers_and_sse_survive_a_handler(void);
void a_spinning_process_gets_its_handler(void);
void sa_nodefer_and_sa_resethand(void);
void sigprocmask_blocks_until_unblocked(void);
void a_signal_storm_is_counted_exactly(void);
void sigsuspend_waits_for_a_signal(void);
void sigchld_reaches_a_handler(void);
void a_handled_signal_interrupts_a_read(void);
void sa_restart_makes_the_read_again(void);
void faults_go_to_their_handlers(void);
void a_broken_pipe_signals_the_writer(void);
void a_program_can_single_step_itself(void);
/* What a read of address raises, as a handler for sig sees it: returns the
 * signal (0 when none came, -1 when no handler could be set), with its code
 * and address; the action for sig is SIG_DFL again after. */
int signal_of_a_read(uint64_t address, int sig, int *code, uint64_t *fault_address);
void a_fault_at_a_kernel_address_says_nothing_of_the_map(void);
void a_frame_holds_nothing_of_the_kernel(void);
void a_background_read_with_sigttin_blocked_gets_eio(void);
void sa_restart_does_not_make_an_ipc_call_again(void);
void fork_keeps_and_exec_resets_handlers(void);
void sigreturn_refuses_hostile_frames(void);
void a_frame_that_cannot_be_written_ends_the_process(void);
/* usertests --signals-after-exec: what exec left of the actions and the
 * mask, as bits of its exit code */
int signals_exec_child_main(void);
/* altstack.c: sigaltstack and SA_ONSTACK (the same cases run on the host) */
void a_stack_overflow_is_caught_on_the_alternate_stack(void);
void sigaltstack_reports_and_refuses_as_linux(void);
void sigaltstack_with_an_unwritable_old_ss_changes_nothing(void);
void a_handler_runs_on_the_alternate_stack(void);
void ss_autodisarm_disarms_the_stack_while_its_handler_runs(void);
void sigreturn_sets_the_stack_uc_stack_names(void);
void a_frame_the_alternate_stack_cannot_take_ends_the_process(void);
void fork_keeps_and_exec_clears_the_alternate_stack(void);
/* usertests --altstack-after-exec: 0 when exec left no alternate stack */
int altstack_exec_child_main(void);
/* jobs.c: process groups, sessions, stops, ignored signals, the terminal */
void groups_and_sessions(void);
void stop_and_continue(void);
void a_stopped_read_goes_on_after_continue(void);
void signal_to_a_group(void);
void ignored_signals(void);
void terminal_ioctls(void);
void kshell_output_captured(void);
void scope_counts_joinpoint_calls(void);
void scope_text_answers_refuse_bad_buffers(void);

/* libc_signals.c: handlers, masks and waiting through the C library */
void a_handler_runs_for_raise(void);
void siginfo_names_the_signal_the_newlib_way(void);
void a_blocked_signal_waits_until_unblocked(void);
void resethand_runs_the_handler_once(void);
void signal_returns_the_previous_handler(void);
void sigaction_refuses_an_unknown_flag(void);
void a_handler_keeps_the_interrupted_floating_point(void);
void sigsuspend_waits_for_a_childs_signal(void);

/* files.c: permissions, rename and links, hostile input to the file calls, scale */
void file_permissions_hold_against_a_user(void);
void rename_and_links(void);
void file_calls_refuse_hostile_input(void);
void ramfs_directory_of_ten_thousand(void);
void ramfs_files_are_sparse_pages(void);
void mount_and_umount(void);
void renames_racing_never_make_a_cycle(void);
void directory_with_a_mount_below_stays(void);
void a_mount_inside_a_closed_directory_is_closed(void);
void a_mount_through_a_link_is_reached_both_ways(void);
void a_link_planted_in_tmp_steers_nobody(void);
void file_mmap_and_positional_io(void);
/* sockets.c: ports and addresses a caller is not entitled to, a user's share */
void sockets_refuse_what_is_not_the_callers(void);
void a_user_cannot_take_every_socket(void);
void small_socket_pools_keep_roots_share(void);
void a_listeners_queue_counts_against_its_owner(void);
void many_users_hold_pipes_and_sockets_at_once(void);
/* sendfile.c: a file to a socket and a file, and refusals */
void sendfile_sends_a_file_to_a_socket_and_a_file(void);
void sendfile_refuses_hostile_input(void);
void shared_file_mmap(void);
void ext2_read_copies_into_user_memory(void);
void bounced_read_stops_at_a_bad_page(void);
/* pipes.c: pipes and waiting for descriptors */
void select_timeout_is_checked_and_never_wraps(void);
void pipe_read_into_a_bad_buffer_keeps_the_bytes(void);
void pipe_pollout_means_a_pipe_buf_write_fits(void);
void pipe_large_nonblocking_write_is_partial(void);

/* clock.c: the user clock page */
void user_clock_agrees_with_the_kernel(void);
void user_clock_is_monotonic(void);
void user_clock_page_is_read_only(void);
void user_clock_survives_fork_and_exec(void);
/* `usertests --clock-check` (exec'd by a test): prints "clock ok" and returns
 * 0 when the page is mapped and agrees with the kernel. */
int user_clock_child_main(void);

/* security.c: the kernel's shared pages and privileges against a hostile process */
void hole_a_results_page_is_a_kernel_region(void);
void hole_e_telemetry_ring_is_a_kernel_region(void);
void attacks_are_refused_to_an_unprivileged_user(void);
void attacks_succeed_as_root(void);
void a_user_pins_only_its_own_processes(void);
void scope_reply_is_the_monitors_only(void);
void scope_reply_receive_refuses_hostile_input(void);
void scope_reply_receive_receives_into_the_inbox(void);
void racing_attaches_make_one_monitor(void);
void a_detached_monitor_never_sees_the_next_ones_events(void);
void a_detached_monitor_that_execs_leaves_the_place(void);
void an_execd_monitor_is_no_longer_the_monitor(void);
/* `usertests --reply-receive` (exec'd by a test): one ms_scope_reply_receive
 * into the inbox; exits with the errno it returned (0 when it succeeded). */
int user_reply_receive_child_main(void);
void linking_into_the_monitor_needs_priv_monitor(void);
void ipc_caller_killed_while_a_receiver_on_its_cpu_holds_the_call(void);
void ipc_receive_into_a_bad_buffer_loses_no_message(void);
void users_and_privileges(void);
void impostor_rscfl_is_refused(void);
void rscfl_unwoven_gives_an_error(void);
void scope_show_and_clear(void);
void hole_d_memory_comes_on_first_touch(void);
void hole_d_kill_gives_memory_back(void);
void a_user_cannot_fill_the_process_table(void);
void one_users_forks_leave_another_user_forking(void);
void a_users_process_count_returns_when_reaped(void);
void a_process_takes_its_count_to_its_new_real_uid(void);
void a_users_endpoints_are_bounded(void);
void a_users_results_pages_are_bounded(void);
void a_users_pipes_are_bounded(void);
void a_users_stacks_take_no_promised_memory(void);
void root_keeps_memory_a_user_cannot_promise_away(void);
void a_fork_shares_read_only_pages_unpromised(void);
void aspect_failures_show_no_kernel_address_to_a_user(void);
void committed_memory_is_there_when_touched(void);
void sparse_pages_come_with_their_tables(void);
void a_user_filling_tmp_takes_no_promised_memory(void);
void mprotect_changes_anonymous_mappings_only(void);
void prot_none_is_refused_to_the_kernels_copies(void);

/* lattrack.c: latency trackers' descriptors */
void lattrack_records_reach_the_descriptor(void);
void lattrack_overflow_is_counted(void);
void lattrack_refuses_bad_input(void);
void lattrack_last_owner_ends_the_tracker(void);
void lattrack_privileges_hold(void);
void lattrack_syscall_report_has_the_user_stack(void);

#endif
