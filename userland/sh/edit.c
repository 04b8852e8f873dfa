/*
 * The interactive shell's line editor: the console in raw mode (ICANON,
 * ECHO and ISIG off, through TCSETS) while a line is typed, cooked again
 * before the line runs, so programs see the console as always.
 *
 * Keys: printable characters insert at the cursor; backspace and DEL erase
 * before it, ESC [ 3 ~ (Delete) under it; left/right arrows, ^A/Home and
 * ^E/End move; ^U kills the line; up/down arrows walk the history (the last
 * HISTORY_SIZE lines, without repeats); Tab completes the word before the
 * cursor (the first word from the builtins and /bin, any other as a path;
 * several candidates: their common part, then the list); ^C drops the line;
 * ^D on an empty line is end of input.  Typing and erasing at the end of
 * the line echo as the kernel's cooked mode does (so a transcript reads the
 * same); any other change redraws the line with a carriage return and
 * ESC [ K, which every terminal emulator understands.
 */
#include "edit.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microscope/syscall.h>

#define TCGETS       0x5401
#define TCSETS       0x5402
#define TERMIOS_SIZE 36
#define LFLAG_RAW    0000013 /* ISIG | ICANON | ECHO: cleared while editing */
#define HISTORY_SIZE 32
#define CANDIDATES   64

static char history[HISTORY_SIZE][EDIT_LINE_MAX];
static int history_count; /* lines stored (the newest at (count - 1) % size) */

struct editor {
	const char *prompt;
	char *line;
	size_t size, length, cursor;
	int history_index; /* history_count: the line being typed */
	const char *const *commands;
	int shown; /* the screen already shows the line as it is */
};

static void out(const char *text, size_t length)
{
	while (length) {
		ssize_t n = write(1, text, length);
		if (n <= 0)
			return;
		text += n;
		length -= (size_t)n;
	}
}

static void out_text(const char *text)
{
	out(text, strlen(text));
}

/* Switches the console's line discipline; returns 0, or -1 when fd 0 is
 * not a terminal.  Back from raw it is always cooked (ISIG, ICANON, ECHO
 * on), even when a program before us left the console raw. */
static int set_raw(int raw, uint32_t *saved)
{
	uint8_t termios[TERMIOS_SIZE];
	if (ms_syscall3(__NR_ioctl, 0, TCGETS, (long)termios) < 0)
		return -1;
	uint32_t lflag;
	memcpy(&lflag, termios + 12, sizeof lflag);
	if (raw) {
		*saved = lflag;
		lflag &= ~(uint32_t)LFLAG_RAW;
	} else {
		lflag = *saved | LFLAG_RAW;
	}
	memcpy(termios + 12, &lflag, sizeof lflag);
	return ms_syscall3(__NR_ioctl, 0, TCSETS, (long)termios) < 0 ? -1 : 0;
}

static void redraw(struct editor *e)
{
	char move[32];
	out_text("\r");
	out_text(e->prompt);
	out(e->line, e->length);
	out_text("\x1b[K");
	if (e->length > e->cursor) {
		snprintf(move, sizeof move, "\x1b[%uD", (unsigned)(e->length - e->cursor));
		out_text(move);
	}
}

static void insert(struct editor *e, const char *text, size_t n)
{
	if (e->length + n >= e->size)
		n = e->size - 1 - e->length;
	memmove(e->line + e->cursor + n, e->line + e->cursor, e->length - e->cursor);
	memcpy(e->line + e->cursor, text, n);
	e->length += n;
	e->cursor += n;
}

static void erase(struct editor *e, size_t at)
{
	if (at >= e->length)
		return;
	memmove(e->line + at, e->line + at + 1, e->length - at - 1);
	e->length--;
	if (e->cursor > at)
		e->cursor--;
}

static void set_line(struct editor *e, const char *text)
{
	e->length = e->cursor = 0;
	insert(e, text, strlen(text));
}

static void walk_history(struct editor *e, int step)
{
	int oldest = history_count > HISTORY_SIZE ? history_count - HISTORY_SIZE : 0;
	int index = e->history_index + step;
	if (index < oldest || index > history_count)
		return;
	e->history_index = index;
	set_line(e, index == history_count ? "" : history[index % HISTORY_SIZE]);
}

void edit_remember(const char *line)
{
	size_t length = strcspn(line, "\n");
	if (length == 0 || length >= EDIT_LINE_MAX)
		return;
	const char *last = history_count ? history[(history_count - 1) % HISTORY_SIZE] : "";
	if (strncmp(last, line, length) == 0 && last[length] == '\0')
		return;
	memcpy(history[history_count % HISTORY_SIZE], line, length);
	history[history_count % HISTORY_SIZE][length] = '\0';
	history_count++;
}

/* ---- Completion ----------------------------------------------------------- */

struct completion {
	char names[CANDIDATES][64];
	int count;
	int directory[CANDIDATES];
};

static void add_candidate(struct completion *c, const char *name, size_t prefix_length,
			  const char *prefix, int directory)
{
	if (c->count == CANDIDATES || strncmp(name, prefix, prefix_length) != 0 ||
	    strlen(name) >= sizeof c->names[0])
		return;
	for (int i = 0; i < c->count; i++)
		if (strcmp(c->names[i], name) == 0)
			return;
	strcpy(c->names[c->count], name);
	c->directory[c->count++] = directory;
}

/* Entries of dir starting with prefix (hidden ones only when asked for). */
static void add_directory(struct completion *c, const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	size_t prefix_length = strlen(prefix);
	for (struct dirent *entry; (entry = readdir(d));) {
		if (entry->d_name[0] == '.' && prefix[0] != '.')
			continue;
		char path[EDIT_LINE_MAX + 300];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
		int directory = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
		add_candidate(c, entry->d_name, prefix_length, prefix, directory);
	}
	closedir(d);
}

static size_t common_length(const struct completion *c)
{
	size_t n = strlen(c->names[0]);
	for (int i = 1; i < c->count; i++) {
		size_t k = 0;
		while (k < n && c->names[i][k] == c->names[0][k])
			k++;
		n = k;
	}
	return n;
}

static void complete(struct editor *e)
{
	size_t start = e->cursor;
	while (start > 0 && e->line[start - 1] != ' ')
		start--;
	char word[EDIT_LINE_MAX];
	if (e->cursor - start >= sizeof word)
		return; /* no name is that long; word must keep room for its NUL */
	memcpy(word, e->line + start, e->cursor - start);
	word[e->cursor - start] = '\0';
	int first_word = strspn(e->line, " ") >= start;
	static struct completion c;
	c.count = 0;
	char *slash = strrchr(word, '/');
	const char *prefix = slash ? slash + 1 : word;
	if (first_word && !slash) {
		for (const char *const *name = e->commands; *name; name++)
			add_candidate(&c, *name, strlen(word), word, 0);
		add_directory(&c, "/bin", word);
	} else {
		char dir[EDIT_LINE_MAX];
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - word) : 1,
			 slash ? word : ".");
		add_directory(&c, slash && slash == word ? "/" : dir, prefix);
	}
	if (c.count == 0)
		return;
	size_t have = strlen(prefix), common = common_length(&c);
	if (common > have)
		insert(e, c.names[0] + have, common - have);
	if (c.count == 1) {
		insert(e, c.directory[0] ? "/" : " ", 1);
	} else if (common == have) {
		out_text("\r\n");
		for (int i = 0; i < c.count; i++) {
			out_text(c.names[i]);
			out_text(c.directory[i] ? "/  " : "  ");
		}
		out_text("\r\n");
	}
}

/* ---- Keys ----------------------------------------------------------------- */

/* A signal (a stopped shell continued) interrupts a read without ending
 * the input: it is read again. */
static int read_byte(char *c)
{
	ssize_t n;
	while ((n = read(0, c, 1)) < 0 && errno == EINTR)
		;
	return n == 1 ? 0 : -1;
}

/* After ESC: arrows, Home, End, Delete. */
static void escape(struct editor *e)
{
	char a, b, tilde;
	if (read_byte(&a) < 0 || (a != '[' && a != 'O') || read_byte(&b) < 0)
		return;
	switch (b) {
	case 'A': walk_history(e, -1); break;
	case 'B': walk_history(e, 1); break;
	case 'C': e->cursor += e->cursor < e->length; break;
	case 'D': e->cursor -= e->cursor > 0; break;
	case 'H': e->cursor = 0; break;
	case 'F': e->cursor = e->length; break;
	case '3':
		if (read_byte(&tilde) == 0 && tilde == '~')
			erase(e, e->cursor);
		break;
	default: break;
	}
}

enum key_result { KEY_MORE, KEY_DONE, KEY_END_OF_INPUT, KEY_INTERRUPT };

static enum key_result key(struct editor *e, char c)
{
	switch (c) {
	case '\r':
	case '\n': return KEY_DONE;
	case 0x04: /* ^D */
		if (e->length == 0)
			return KEY_END_OF_INPUT;
		erase(e, e->cursor);
		return KEY_MORE;
	case 0x03: /* ^C */
		out_text("^C");
		e->length = e->cursor = 0;
		return KEY_INTERRUPT;
	case 0x01: e->cursor = 0; return KEY_MORE;
	case 0x05: e->cursor = e->length; return KEY_MORE;
	case 0x15: e->length = e->cursor = 0; return KEY_MORE;
	case 0x08:
	case 0x7f:
		if (e->cursor == e->length && e->cursor) {
			out_text("\b \b"); /* at the end: as cooked mode erases */
			e->shown = 1;
		}
		if (e->cursor)
			erase(e, e->cursor - 1);
		return KEY_MORE;
	case '\t': complete(e); return KEY_MORE;
	case 0x1b: escape(e); return KEY_MORE;
	default:
		if ((unsigned char)c < ' ')
			return KEY_MORE;
		if (e->cursor == e->length && e->length + 1 < e->size) {
			out(&c, 1); /* at the end: an echo, as cooked mode gives */
			e->shown = 1;
		}
		insert(e, &c, 1);
		return KEY_MORE;
	}
}

int edit_line(const char *prompt, const char *const *commands, char *line, size_t size)
{
	uint32_t saved;
	if (size < 2 || set_raw(1, &saved) < 0)
		return EDIT_NOT_A_TERMINAL;
	struct editor e = {prompt, line, size - 1, 0, 0, history_count, commands, 0};
	out_text(prompt);
	enum key_result result = KEY_MORE;
	while (result == KEY_MORE) {
		char c;
		if (read_byte(&c) < 0) {
			result = KEY_END_OF_INPUT;
			break;
		}
		e.shown = 0;
		result = key(&e, c);
		if (result == KEY_MORE && !e.shown)
			redraw(&e);
	}
	out_text("\r\n");
	set_raw(0, &saved);
	if (result == KEY_END_OF_INPUT)
		return EDIT_END_OF_INPUT;
	if (result == KEY_INTERRUPT)
		return EDIT_INTERRUPTED;
	line[e.length] = '\n';
	line[e.length + 1] = '\0';
	return (int)e.length + 1;
}
