/* bench/onednn_ref_polysci.h — ps_desc (conv) -> onednn_conv_params.
 * Header-only; include after <polysci/polysci.h>. For tests that cross-check
 * polysci against oneDNN:
 *     onednn_conv_params p; onednn_params_from_ps(&desc, &p);
 *     onednn_conv_run_once(&p, src, user_weights, bias, ref_dst);   */
#ifndef POLYSCI_BENCH_ONEDNN_REF_POLYSCI_H
#define POLYSCI_BENCH_ONEDNN_REF_POLYSCI_H

#include <polysci/polysci.h>
#include "onednn_ref.h"

static inline void onednn_params_from_ps(const ps_desc *d, onednn_conv_params *p)
{
    const ps_conv_desc *c = &d->u.conv;
    onednn_conv_params_init(p);
    p->N = c->N;
    p->C = c->C;
    p->K = c->K;
    p->H = c->H;
    p->W = c->W;
    p->R = c->R;
    p->S = c->S;
    p->stride_h = c->stride_h;
    p->stride_w = c->stride_w;
    p->pad_t = c->pad_top;
    p->pad_b = c->pad_bottom;
    p->pad_l = c->pad_left;
    p->pad_r = c->pad_right;
    p->dil_h = c->dilation_h;
    p->dil_w = c->dilation_w;
    p->with_bias = (c->post_ops & PS_POST_BIAS) != 0;
    p->with_relu = (c->post_ops & PS_POST_RELU) != 0;
    p->act_layout = c->layout == PS_LAYOUT_NCHW ? ONEDNN_ACT_NCHW : ONEDNN_ACT_NHWC;
    switch (c->weight_layout) {
    case PS_WEIGHTS_KRSC: p->w_layout = ONEDNN_W_KRSC; break;
    case PS_WEIGHTS_RSCK: p->w_layout = ONEDNN_W_RSCK; break;
    default: p->w_layout = ONEDNN_W_KCRS; break;
    }
}

#endif
