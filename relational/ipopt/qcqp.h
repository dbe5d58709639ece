#include "IpStdCInterface.h"

typedef struct {
	int n, nlin, nquad;
	double* c;
	int* lin_ptr; int* lin_idx; double* lin_val;
	int* quad_ptr; int* term_ptr; int* term_idx; double* term_val;
} qcqp;

int qcqp_solve(qcqp* p, double* xl, double* xu, double* gl, double* gu, int nele_jac, int nele_hess,
	double tol, double* x, double* obj);
