/*
 * Decimal numbers typed by people and hosts (command arguments, control
 * lines, kernel parameters): digits only, bounded, nothing after them.
 *
 *     uint64_t port;
 *     if (parse_decimal(text, 65535, &port)) return -EINVAL;
 */
#ifndef KERNEL_LIB_NUMBER_H
#define KERNEL_LIB_NUMBER_H

#include <stdint.h>

/* Reads text as a decimal number of at most max into *value.  Returns 0, or
 * -EINVAL (empty, a character that is not a digit, or more than max;
 * *value is then unchanged). */
int parse_decimal(const char *text, uint64_t max, uint64_t *value);

#endif
