/* Internal: the monotonic clock planners time themselves with. */
#ifndef PS_CORE_CLOCK_H
#define PS_CORE_CLOCK_H

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary origin). */
double ps_now_ms(void);

#endif
