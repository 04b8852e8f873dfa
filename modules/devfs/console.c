/*
 * /dev/console: writes go to the kernel console (every sink: serial,
 * screen), reads come from COM1 through a line discipline.  Typed bytes
 * arrive in interrupt context (the UART's receive handler) and are edited
 * into `line`: backspace/DEL erases, ^U kills the line, ^C drops it and
 * interrupts the foreground process, ^D ends input (an empty read) or
 * hands over a partial line, Enter completes it.  Completed lines wait in
 * `cooked` for readers; a read returns at most one line.
 *
 * Invariant: line, cooked and eof_marks change only under console.lock
 * with interrupts off; readers sleep on the "tty" queue with the condition
 * "cooked has bytes, an end-of-file mark is pending, or a signal is
 * pending".  COM1 input is claimed from the kernel shell the first time the
 * console is opened for reading.  When the UART has no receive interrupt,
 * readers poll it (uart_rx_read pumps the chip into the handler).  Input
 * that makes the console readable is announced with vfs_poll_notify.
 *
 * Job control (POSIX's controlling terminal): the console belongs to at most
 * one session (TIOCSCTTY by its leader; free again once that leader ended,
 * and then its foreground group hears SIGHUP)
 * and has one foreground process group in it (TIOCSPGRP).  ^C sends SIGINT
 * and ^Z SIGTSTP to the foreground group only, so a daemon in its own
 * session never hears them.  A process of the console's session outside the
 * foreground group that reads gets SIGTTIN (it stops until the shell puts it
 * in the foreground), or -EIO when it ignores SIGTTIN.  Without a session,
 * ^C and ^Z only drop the line being typed.
 *
 * Raw mode: TCSETS with ICANON off hands every typed byte to readers as it
 * comes (a read returns what is there, at least one byte), ECHO off stops the
 * echo, ISIG off makes ^C and ^Z plain bytes; the other termios fields are
 * accepted and ignored.  The user shell edits its own line this way.  The
 * console is cooked again when its session hangs up or a session takes it.
 */
#include "devfs/devfs.h"

#include "console/console.h"
#include "devfs/internal.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/proc.h"
#include "time/time.h"
#include "uart/uart.h"

#define COOKED_SIZE      1024
#define POLL_INTERVAL_NS (20 * NSEC_PER_MSEC)

#define CTRL_C 0x03
#define CTRL_D 0x04
#define CTRL_U 0x15
#define CTRL_Z 0x1a

/* c_lflag bits (Linux's) the line discipline honours. */
#define LFLAG_ISIG   0000001
#define LFLAG_ICANON 0000002
#define LFLAG_ECHO   0000010
#define LFLAG_COOKED 0000073 /* ISIG | ICANON | ECHO | ECHOE | ECHOK: the default */
#define BACKSPACE    0x08
#define DELETE       0x7f

static struct {
	struct spinlock lock;
	char line[DEVFS_CONSOLE_LINE_MAX];
	size_t line_length;
	char cooked[COOKED_SIZE];
	size_t head, tail; /* head - tail bytes waiting; indices grow forever */
	unsigned eof_marks;
	bool input_claimed;
	int session;    /* the session the console is the controlling terminal of; 0: none */
	int foreground; /* its foreground process group */
	uint32_t lflag; /* LFLAG_* */
} console = {.lock = SPINLOCK_INIT("console.input"), .lflag = LFLAG_COOKED};

static struct waitq readers = WAITQ_INIT(readers, "tty"); /* ps's wait channel */
static struct mutex claim_lock = MUTEX_INIT(claim_lock, "console.claim");

static void echo(const char *text, size_t length)
{
	console_write(text, length);
}

/* Moves the edited line (plus end, if not 0) to cooked.  Lock held. */
static void complete_line(char end)
{
	spin_assert_held(&console.lock);
	size_t room = COOKED_SIZE - (console.head - console.tail);
	size_t n = console.line_length + (end ? 1 : 0);
	if (n > room)
		n = room; /* the rest is lost: nobody reads */
	for (size_t i = 0; i < n; i++) {
		char c = i < console.line_length ? console.line[i] : end;
		console.cooked[console.head++ % COOKED_SIZE] = c;
	}
	console.line_length = 0;
}

/* Raw mode: the byte goes to readers as it is.  Lock held. */
static bool pass_raw(char c)
{
	if (console.head - console.tail < COOKED_SIZE)
		console.cooked[console.head++ % COOKED_SIZE] = c;
	if (console.lflag & LFLAG_ECHO)
		echo(&c, 1);
	return true;
}

/* Applies one typed byte.  Returns true when readers may want waking;
 * sets *signal for ^C (SIGINT) and ^Z (SIGTSTP).  Lock held. */
static bool edit(char c, int *signal)
{
	bool signals = console.lflag & LFLAG_ISIG;
	if (!(console.lflag & LFLAG_ICANON) && !(signals && (c == CTRL_C || c == CTRL_Z)))
		return pass_raw(c);
	if (!signals && (c == CTRL_C || c == CTRL_Z))
		c = 0; /* ISIG off in cooked mode: dropped */
	switch (c) {
	case 0: return false;
	case CTRL_C:
		console.line_length = 0;
		*signal = SIGINT;
		echo("^C\n", 3);
		return false;
	case CTRL_Z:
		console.line_length = 0;
		*signal = SIGTSTP;
		echo("^Z\n", 3);
		return false;
	case CTRL_D:
		if (console.line_length == 0)
			console.eof_marks++;
		else
			complete_line(0);
		return true;
	case CTRL_U:
		for (; console.line_length; console.line_length--)
			echo("\b \b", 3);
		return false;
	case BACKSPACE:
	case DELETE:
		if (console.line_length) {
			console.line_length--;
			echo("\b \b", 3);
		}
		return false;
	case '\r':
	case '\n':
		echo("\n", 1);
		complete_line('\n');
		return true;
	default:
		if (console.line_length < DEVFS_CONSOLE_LINE_MAX - 1) {
			console.line[console.line_length++] = c;
			echo(&c, 1);
		}
		return false;
	}
}

void devfs_console_input(const char *bytes, size_t length)
{
	bool wake = false;
	int signal = 0;
	uint64_t flags = spin_lock_irqsave(&console.lock);
	for (size_t i = 0; i < length; i++)
		wake |= edit(bytes[i], &signal);
	int foreground = console.session ? console.foreground : 0;
	spin_unlock_irqrestore(&console.lock, flags);
	if (wake) {
		waitq_wake_all(&readers);
		vfs_poll_notify();
	}
	if (signal && foreground > 0)
		proc_signal_group(foreground, signal);
}

void devfs_console_flush(void)
{
	uint64_t flags = spin_lock_irqsave(&console.lock);
	console.line_length = 0;
	console.tail = console.head;
	console.eof_marks = 0;
	spin_unlock_irqrestore(&console.lock, flags);
}

static void rx_handler(char byte, void *ctx)
{
	devfs_console_input(&byte, 1);
}

/* Takes COM1 input over from the kernel shell, once. */
static void claim_input(void)
{
	mutex_lock(&claim_lock);
	if (!console.input_claimed) {
		uart_set_rx_handler(rx_handler, NULL);
		uart_rx_start();
		console.input_claimed = true;
	}
	mutex_unlock(&claim_lock);
}

static int console_open(struct vfs_file *file)
{
	if ((file->flags & VFS_O_ACCMODE) != VFS_O_WRONLY)
		claim_input();
	return 0;
}

static bool input_ready(void *arg)
{
	return console.head != console.tail || console.eof_marks || vfs_signal_pending();
}

/* Copies at most one line of cooked input, or takes an end-of-file mark.
 * Returns bytes, 0 for end of file, -EAGAIN when there is nothing. */
static int64_t take_input(char *buffer, size_t length)
{
	int64_t n = -EAGAIN;
	uint64_t flags = spin_lock_irqsave(&console.lock);
	bool canonical = console.lflag & LFLAG_ICANON;
	if (console.head != console.tail) {
		n = 0;
		while ((size_t)n < length && console.tail != console.head) {
			char c = console.cooked[console.tail++ % COOKED_SIZE];
			buffer[n++] = c;
			if (c == '\n' && canonical)
				break;
		}
	} else if (console.eof_marks) {
		console.eof_marks--;
		n = 0;
	}
	spin_unlock_irqrestore(&console.lock, flags);
	return n;
}

/* A read from a background group of the console's session: SIGTTIN stops
 * the group (-EINTR: the read is made again once it is continued), or -EIO
 * when the caller ignores it.  0 for everybody else. */
static int64_t check_background_read(void)
{
	struct process *self = proc_current();
	if (!self)
		return 0;
	uint64_t flags = spin_lock_irqsave(&console.lock);
	bool background = console.session && proc_sid(self) == console.session &&
			  proc_pgid(self) != console.foreground;
	spin_unlock_irqrestore(&console.lock, flags);
	if (!background)
		return 0;
	if (proc_refuses_signal(SIGTTIN)) /* ignored or blocked: as Linux */
		return -EIO;
	proc_signal_group(proc_pgid(self), SIGTTIN);
	return -EINTR;
}

static int64_t console_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	if (length == 0)
		return 0;
	int64_t background = check_background_read();
	if (background)
		return background;
	for (;;) {
		int64_t n = take_input(buffer, length);
		if (n != -EAGAIN || (file->flags & VFS_O_NONBLOCK))
			return n;
		if (vfs_signal_pending())
			return -EINTR;
		char pump;
		uart_rx_read(&pump, 0, UART_RX_NONBLOCK); /* polled mode: drain the chip */
		waitq_wait_timeout(&readers, input_ready, NULL, POLL_INTERVAL_NS);
	}
}

static int64_t console_write_op(struct vfs_file *file, const void *buffer, size_t length,
				uint64_t offset)
{
	console_write(buffer, length);
	return (int64_t)length;
}

/* Linux's struct termios for a cooked, echoing 115200 8N1 line. */
static void fill_termios(uint8_t *termios)
{
	uint32_t flags[4] = {
	    0000400,                                           /* c_iflag: ICRNL */
	    0000005,                                           /* c_oflag: OPOST | ONLCR */
	    0010002 | 060 | 0200,                              /* c_cflag: B115200 | CS8 | CREAD */
	    __atomic_load_n(&console.lflag, __ATOMIC_RELAXED), /* c_lflag */
	};
	memset(termios, 0, DEVFS_TERMIOS_SIZE);
	memcpy(termios, flags, sizeof flags);
	uint8_t *cc = termios + 17; /* after c_line */
	cc[0] = CTRL_C;             /* VINTR */
	cc[2] = DELETE;             /* VERASE */
	cc[3] = CTRL_U;             /* VKILL */
	cc[4] = CTRL_D;             /* VEOF */
	cc[6] = 1;                  /* VMIN */
}

/* TIOCSCTTY: the caller, a session leader, makes the console its session's
 * controlling terminal, its group the foreground.  Returns 0, -EPERM (not a
 * session leader, or another session holds the console and its leader
 * lives). */
static int take_console(void)
{
	struct process *self = proc_current();
	if (!self || proc_sid(self) != proc_pid(self))
		return -EPERM;
	int holder = __atomic_load_n(&console.session, __ATOMIC_RELAXED);
	if (holder && holder != proc_sid(self) && proc_session_leader_alive(holder))
		return -EPERM;
	uint64_t flags = spin_lock_irqsave(&console.lock);
	console.session = proc_sid(self);
	console.foreground = proc_pgid(self);
	console.lflag = LFLAG_COOKED; /* whatever raw mode the last session left */
	spin_unlock_irqrestore(&console.lock, flags);
	return 0;
}

/* TIOCNOTTY from a process of the console's session: the console has no
 * session from now on.  Returns 0 or -ENOTTY. */
static int release_console(void)
{
	struct process *self = proc_current();
	uint64_t flags = spin_lock_irqsave(&console.lock);
	int error = self && console.session == proc_sid(self) ? 0 : -ENOTTY;
	if (!error)
		console.session = console.foreground = 0;
	spin_unlock_irqrestore(&console.lock, flags);
	return error;
}

/* TIOCSPGRP: only from the console's session, to a group in it.  Returns 0,
 * -ENOTTY (the caller's session does not hold the console), -EINVAL or
 * -EPERM (no such group in the session). */
static int set_foreground(int pgid)
{
	struct process *self = proc_current();
	if (!self || proc_sid(self) != __atomic_load_n(&console.session, __ATOMIC_RELAXED))
		return -ENOTTY;
	if (pgid <= 0)
		return -EINVAL;
	if (!proc_group_in_session(pgid, proc_sid(self)))
		return -EPERM;
	uint64_t flags = spin_lock_irqsave(&console.lock);
	console.foreground = pgid;
	spin_unlock_irqrestore(&console.lock, flags);
	return 0;
}

/* TIOCGPGRP, TIOCGSID: only from the console's session (-ENOTTY). */
static int get_terminal_id(unsigned long command, int *id)
{
	struct process *self = proc_current();
	int session = __atomic_load_n(&console.session, __ATOMIC_RELAXED);
	if (!self || !session || proc_sid(self) != session)
		return -ENOTTY;
	*id = command == VFS_TIOCGSID ? session
				      : __atomic_load_n(&console.foreground, __ATOMIC_RELAXED);
	return 0;
}

/* TCSETS: takes ISIG, ICANON and ECHO from c_lflag (the rest is ignored).
 * Leaving canonical mode hands a half-typed line over as it is. */
static void set_modes(const uint8_t *termios)
{
	uint32_t lflag;
	memcpy(&lflag, termios + 12, sizeof lflag);
	uint64_t flags = spin_lock_irqsave(&console.lock);
	if (!(lflag & LFLAG_ICANON) && console.line_length)
		complete_line(0);
	console.lflag = (console.lflag & ~(LFLAG_ISIG | LFLAG_ICANON | LFLAG_ECHO)) |
			(lflag & (LFLAG_ISIG | LFLAG_ICANON | LFLAG_ECHO));
	spin_unlock_irqrestore(&console.lock, flags);
	waitq_wake_all(&readers);
}

static int console_ioctl(struct vfs_file *file, unsigned long command, void *argument)
{
	switch (command) {
	case VFS_TIOCSCTTY: return take_console();
	case VFS_TIOCNOTTY: return release_console();
	case VFS_TIOCSPGRP: {
		int pgid;
		memcpy(&pgid, argument, sizeof pgid);
		return set_foreground(pgid);
	}
	case VFS_TIOCGPGRP:
	case VFS_TIOCGSID: {
		int id = 0;
		int error = get_terminal_id(command, &id);
		memcpy(argument, &id, sizeof id);
		return error;
	}
	case VFS_TCGETS: fill_termios(argument); return 0;
	case VFS_TCSETS:
	case VFS_TCSETSW:
	case VFS_TCSETSF: set_modes(argument); return 0;
	case VFS_TIOCGWINSZ: {
		static const uint16_t size[4] = {24, 80, 0, 0}; /* rows, columns */
		memcpy(argument, size, sizeof size);
		return 0;
	}
	default: return -ENOTTY;
	}
}

/* Readable with a line or an end-of-file mark waiting; always writable. */
static unsigned console_poll(struct vfs_file *file)
{
	char pump;
	uart_rx_read(&pump, 0, UART_RX_NONBLOCK); /* polled mode: drain the chip */
	uint64_t flags = spin_lock_irqsave(&console.lock);
	bool readable = console.head != console.tail || console.eof_marks;
	spin_unlock_irqrestore(&console.lock, flags);
	return VFS_POLL_OUT | (readable ? VFS_POLL_IN : 0);
}

static const struct vfs_file_ops console_ops = {
    .open = console_open,
    .read = console_read,
    .write = console_write_op,
    .ioctl = console_ioctl,
    .poll = console_poll,
};

/* The leader of session sid ended: when it held the console, its foreground
 * group hears SIGHUP (then SIGCONT, so that a stopped member acts on it) and
 * the console is free and cooked again.  A daemon in a session of its own is not reached. */
static void hang_up(int sid)
{
	uint64_t flags = spin_lock_irqsave(&console.lock);
	int foreground = console.session == sid ? console.foreground : 0;
	if (console.session == sid) {
		console.session = console.foreground = 0;
		console.lflag = LFLAG_COOKED; /* a shell that died editing left it raw */
	}
	spin_unlock_irqrestore(&console.lock, flags);
	if (foreground > 0)
		proc_hangup_group(foreground);
}

int devfs_console_register(void)
{
	proc_set_session_end_hook(hang_up);
	/* root's alone, as on Linux: another user's process opening it could
	 * take the lines typed at the console shell or change its modes */
	return devfs_register("console", 0600, &console_ops, NULL);
}
