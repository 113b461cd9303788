/* Numbers as people read them. */
#ifndef GF_CORE_NUMBER_H
#define GF_CORE_NUMBER_H

/* The double of the shortest decimal that reads back as f (0.1 for 0.1f, not 0.10000000149011612): what a
 * float is written as in JSON (configs, recipes), where it is read back as a float. NaN and infinities are
 * returned as they are. */
double gf_float_shortest(float f);

#endif
