/*
 * A small, complete-enough vsnprintf.  Output goes through a cursor that counts
 * every byte it would have written, so truncation never changes the returned
 * length and callers can size a buffer with a first call of size 0.
 */
#include "lib/format.h"

#include <stdbool.h>
#include <stdint.h>

#include "lib/string.h"

struct out {
	char *buffer;
	size_t size;
	size_t length;
};

struct spec {
	bool left;
	bool zero;
	bool plus;
	bool space;
	bool alternate;
	int width;
	int precision; /* -1: none */
	int length;    /* 'H' hh, 'h', 'l', 'L' ll/j/z/t, 0 int */
};

static void put(struct out *out, char c)
{
	if (out->length + 1 < out->size)
		out->buffer[out->length] = c;
	out->length++;
}

static void put_repeat(struct out *out, char c, int count)
{
	while (count-- > 0)
		put(out, c);
}

static void put_padded(struct out *out, const struct spec *spec, const char *text, int length)
{
	int pad = spec->width > length ? spec->width - length : 0;
	if (!spec->left)
		put_repeat(out, ' ', pad);
	for (int i = 0; i < length; i++)
		put(out, text[i]);
	if (spec->left)
		put_repeat(out, ' ', pad);
}

/* Writes digits of value in base to the end of scratch; returns the start. */
static char *digits(uint64_t value, unsigned base, bool upper, char *end)
{
	const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char *p = end;
	do {
		*--p = set[value % base];
		value /= base;
	} while (value);
	return p;
}

static void put_number(struct out *out, const struct spec *spec, uint64_t magnitude, bool negative,
		       unsigned base, bool upper, const char *prefix)
{
	char scratch[24];
	char *end = scratch + sizeof scratch;
	char *start = digits(magnitude, base, upper, end);
	int ndigits = (int)(end - start);
	if (spec->precision == 0 && magnitude == 0)
		ndigits = 0;

	char sign = negative ? '-' : spec->plus ? '+' : spec->space ? ' ' : 0;
	int prefix_length = (int)strlen(prefix) + (sign ? 1 : 0);
	int zeros = spec->precision > ndigits ? spec->precision - ndigits : 0;
	int total = prefix_length + zeros + ndigits;
	int pad = spec->width > total ? spec->width - total : 0;

	if (spec->zero && !spec->left && spec->precision < 0) {
		zeros += pad;
		pad = 0;
	}
	if (!spec->left)
		put_repeat(out, ' ', pad);
	if (sign)
		put(out, sign);
	for (const char *p = prefix; *p; p++)
		put(out, *p);
	put_repeat(out, '0', zeros);
	for (int i = 0; i < ndigits; i++)
		put(out, start[i]);
	if (spec->left)
		put_repeat(out, ' ', pad);
}

static const char *parse_flags(const char *f, struct spec *spec)
{
	for (;; f++) {
		switch (*f) {
		case '-': spec->left = true; break;
		case '0': spec->zero = true; break;
		case '+': spec->plus = true; break;
		case ' ': spec->space = true; break;
		case '#': spec->alternate = true; break;
		default: return f;
		}
	}
}

static const char *parse_int(const char *f, int *value, va_list *args)
{
	if (*f == '*') {
		*value = va_arg(*args, int);
		return f + 1;
	}
	*value = 0;
	while (*f >= '0' && *f <= '9')
		*value = *value * 10 + (*f++ - '0');
	return f;
}

static const char *parse_length(const char *f, struct spec *spec)
{
	if (f[0] == 'h' && f[1] == 'h') {
		spec->length = 'H';
		return f + 2;
	}
	if (f[0] == 'l' && f[1] == 'l') {
		spec->length = 'L';
		return f + 2;
	}
	switch (*f) {
	case 'h': spec->length = 'h'; return f + 1;
	case 'l': spec->length = 'l'; return f + 1;
	case 'z':
	case 't':
	case 'j': spec->length = 'L'; return f + 1;
	default: return f;
	}
}

static int64_t signed_arg(const struct spec *spec, va_list *args)
{
	switch (spec->length) {
	case 'H': return (signed char)va_arg(*args, int);
	case 'h': return (short)va_arg(*args, int);
	case 'l': return va_arg(*args, long);
	case 'L': return va_arg(*args, long long);
	default: return va_arg(*args, int);
	}
}

static uint64_t unsigned_arg(const struct spec *spec, va_list *args)
{
	switch (spec->length) {
	case 'H': return (unsigned char)va_arg(*args, unsigned);
	case 'h': return (unsigned short)va_arg(*args, unsigned);
	case 'l': return va_arg(*args, unsigned long);
	case 'L': return va_arg(*args, unsigned long long);
	default: return va_arg(*args, unsigned);
	}
}

static void put_string(struct out *out, struct spec *spec, const char *s)
{
	if (!s)
		s = "(null)";
	size_t max = spec->precision >= 0 ? (size_t)spec->precision : SIZE_MAX;
	put_padded(out, spec, s, (int)strnlen(s, max));
}

/* Handles one conversion at *f; returns the character after it. */
static const char *convert(struct out *out, const char *f, va_list *args)
{
	struct spec spec = {.precision = -1};
	const char *start = f - 1;

	f = parse_flags(f, &spec);
	f = parse_int(f, &spec.width, args);
	if (spec.width < 0) {
		spec.left = true;
		spec.width = -spec.width;
	}
	if (*f == '.')
		f = parse_int(f + 1, &spec.precision, args);
	f = parse_length(f, &spec);

	switch (*f) {
	case 'd':
	case 'i': {
		int64_t v = signed_arg(&spec, args);
		uint64_t magnitude = v < 0 ? -(uint64_t)v : (uint64_t)v;
		put_number(out, &spec, magnitude, v < 0, 10, false, "");
		break;
	}
	case 'u': put_number(out, &spec, unsigned_arg(&spec, args), false, 10, false, ""); break;
	case 'x':
		put_number(out, &spec, unsigned_arg(&spec, args), false, 16, false,
			   spec.alternate ? "0x" : "");
		break;
	case 'X':
		put_number(out, &spec, unsigned_arg(&spec, args), false, 16, true,
			   spec.alternate ? "0X" : "");
		break;
	case 'o': put_number(out, &spec, unsigned_arg(&spec, args), false, 8, false, ""); break;
	case 'p':
		put_number(out, &spec, (uintptr_t)va_arg(*args, void *), false, 16, false, "0x");
		break;
	case 's': put_string(out, &spec, va_arg(*args, const char *)); break;
	case 'c': {
		char c = (char)va_arg(*args, int);
		put_padded(out, &spec, &c, 1);
		break;
	}
	case '%': put(out, '%'); break;
	default:
		/* Unknown or truncated conversion: show it, so the mistake is seen. */
		for (const char *p = start; p <= f && *p; p++)
			put(out, *p);
		if (!*f)
			return f;
	}
	return f + 1;
}

int vsnprintf(char *buffer, size_t size, const char *format, va_list args)
{
	struct out out = {buffer, size, 0};
	va_list copy;
	va_copy(copy, args);

	const char *f = format;
	while (*f) {
		if (*f != '%') {
			put(&out, *f++);
			continue;
		}
		f = convert(&out, f + 1, &copy);
	}
	va_end(copy);
	if (size)
		buffer[out.length < size ? out.length : size - 1] = '\0';
	return (int)out.length;
}

int snprintf(char *buffer, size_t size, const char *format, ...)
{
	va_list args;
	va_start(args, format);
	int n = vsnprintf(buffer, size, format, args);
	va_end(args);
	return n;
}
