/* Internal to lib/machine: helpers shared by machine.c and calibrate.c. */
#ifndef PS_MACHINE_INTERNAL_H
#define PS_MACHINE_INTERNAL_H

#include <stddef.h>
#include "machine/machine.h"

/* Appends "; "-separated text to m->notes, truncating with "..." when full. */
void ps_machine_note(ps_machine *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Removes the notes that start with prefix (a measurement superseding what
 * they say). */
void ps_machine_drop_notes(ps_machine *m, const char *prefix);

/* PS_CALIBRATE: 0 = off (table only), 1 = normal, 2 = force re-measuring. */
int ps_machine_calibrate_mode(ps_machine *m);

/* Latency/bandwidth of every level and memory from the built-in table: its
 * Intel Xeon row where cpu_key and cpu_name say so, else its default row. */
const char *ps_machine_perf_table(ps_machine *m); /* the row's name */

/* Loads the profile for m's key into m (perf + peak). 1 when loaded; 0 when
 * absent (silent) or rejected (noted). */
int ps_machine_load_profile(ps_machine *m);

/* "48K", "508M", "1G" or plain bytes; for notes. */
void ps_machine_fmt_size(size_t bytes, char *buf, size_t len);

/* Locale-independent fixed-point formatting and parsing of non-negative
 * decimals ("123.456"); the number formatting in the C library follows
 * LC_NUMERIC, which an application may have changed. */
void ps_machine_fmt_fixed(double v, int decimals, char *buf, size_t len);
/* Parses digits[.digits] at *s, advancing *s. 0 on failure. */
int ps_machine_parse_decimal(const char **s, double *out);

#endif
