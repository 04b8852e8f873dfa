#!/bin/sh
# A module's internal header belongs to it alone.  Fails when a source includes
# "<module>/internal.h" (or "<module>/*_internal.h") from outside that module.
set -eu
status=0
for src in $(find "$@" -name '*.[chS]' 2>/dev/null); do
	own=$(dirname "$src")
	for header in $(sed -n 's/^#include "\([^"]*internal\.h\)".*/\1/p' "$src"); do
		case "$own" in
		*/"$(dirname "$header")" | "$(dirname "$header")") ;;
		*)
			echo "$src: includes $header, another module's internal header"
			status=1
			;;
		esac
	done
done
exit $status
