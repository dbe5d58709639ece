//go:build ipopt

#include <stdlib.h>
#include "qcqp.h"

static Bool eval_f(Index n, Number* x, Bool new_x, Number* obj, UserDataPtr ud) {
	qcqp* p = (qcqp*)ud;
	double s = 0;
	for (int v = 0; v < n; v++) s += p->c[v] * x[v];
	*obj = s;
	return TRUE;
}

static Bool eval_grad_f(Index n, Number* x, Bool new_x, Number* g, UserDataPtr ud) {
	qcqp* p = (qcqp*)ud;
	for (int v = 0; v < n; v++) g[v] = p->c[v];
	return TRUE;
}

static double term(qcqp* p, int t, Number* x) {
	double s = 0;
	for (int e = p->term_ptr[t]; e < p->term_ptr[t + 1]; e++) s += p->term_val[e] * x[p->term_idx[e]];
	return s;
}

static Bool eval_g(Index n, Number* x, Bool new_x, Index m, Number* g, UserDataPtr ud) {
	qcqp* p = (qcqp*)ud;
	for (int i = 0; i < p->nlin; i++) {
		double s = 0;
		for (int e = p->lin_ptr[i]; e < p->lin_ptr[i + 1]; e++) s += p->lin_val[e] * x[p->lin_idx[e]];
		g[i] = s;
	}
	for (int j = 0; j < p->nquad; j++) {
		double s = 0;
		for (int t = p->quad_ptr[j]; t < p->quad_ptr[j + 1]; t++) {
			double a = term(p, t, x);
			s += a * a;
		}
		g[p->nlin + j] = s;
	}
	return TRUE;
}

static Bool eval_jac_g(Index n, Number* x, Bool new_x, Index m, Index nele, Index* iRow, Index* jCol, Number* val, UserDataPtr ud) {
	qcqp* p = (qcqp*)ud;
	int k = 0;
	for (int i = 0; i < p->nlin; i++)
		for (int e = p->lin_ptr[i]; e < p->lin_ptr[i + 1]; e++) {
			if (val == NULL) { iRow[k] = i; jCol[k] = p->lin_idx[e]; } else { val[k] = p->lin_val[e]; }
			k++;
		}
	for (int j = 0; j < p->nquad; j++)
		for (int t = p->quad_ptr[j]; t < p->quad_ptr[j + 1]; t++) {
			double a = val == NULL ? 0 : term(p, t, x);
			for (int e = p->term_ptr[t]; e < p->term_ptr[t + 1]; e++) {
				if (val == NULL) { iRow[k] = p->nlin + j; jCol[k] = p->term_idx[e]; } else { val[k] = 2 * a * p->term_val[e]; }
				k++;
			}
		}
	return TRUE;
}

static Bool eval_h(Index n, Number* x, Bool new_x, Number obj_factor, Index m, Number* lambda, Bool new_lambda,
		Index nele, Index* iRow, Index* jCol, Number* val, UserDataPtr ud) {
	qcqp* p = (qcqp*)ud;
	int k = 0;
	for (int j = 0; j < p->nquad; j++)
		for (int t = p->quad_ptr[j]; t < p->quad_ptr[j + 1]; t++)
			for (int e = p->term_ptr[t]; e < p->term_ptr[t + 1]; e++)
				for (int f = p->term_ptr[t]; f < p->term_ptr[t + 1]; f++) {
					int a = p->term_idx[e], b = p->term_idx[f];
					if (a < b) continue; /* lower triangle */
					if (val == NULL) { iRow[k] = a; jCol[k] = b; } else { val[k] = 2 * lambda[p->nlin + j] * p->term_val[e] * p->term_val[f]; }
					k++;
				}
	return TRUE;
}

int qcqp_solve(qcqp* p, double* xl, double* xu, double* gl, double* gu, int nele_jac, int nele_hess,
		double tol, double* x, double* obj) {
	int m = p->nlin + p->nquad;
	IpoptProblem prob = CreateIpoptProblem(p->n, xl, xu, m, gl, gu, nele_jac, nele_hess, 0,
		eval_f, eval_g, eval_grad_f, eval_jac_g, eval_h);
	if (prob == NULL) return -100;
	AddIpoptIntOption(prob, "print_level", 0);
	AddIpoptStrOption(prob, "sb", "yes");
	AddIpoptNumOption(prob, "tol", tol);
	AddIpoptStrOption(prob, "mu_strategy", "adaptive");
	int status = IpoptSolve(prob, x, NULL, obj, NULL, NULL, NULL, p);
	FreeIpoptProblem(prob);
	return status;
}
