"""The High-Performance Linpack (HPL) benchmark's tuning space: the algorithmic knobs of HPL.dat for
one run (one problem size N on `nprocs` MPI processes). Not a GPU kernel, but the same kind of
space: a product of discrete choices cut by validity and "not worth timing" rules.

HPL solves a dense N x N system by right-looking LU with row partial pivoting, the matrix
distributed block-cyclically in NB x NB blocks over a P x Q process grid.

Settings fix the problem (N, nprocs, the memory of a process) and the knobs that barely matter or
that the job launcher decides: the process mapping PMAP, the storage of the L1 and U panels
(transposed or not) and equilibration. Tuning parameters:

    NB         block size: the panel width and the granularity of the block-cyclic distribution
    P          process rows, Q = nprocs // P process columns: exact factorizations with P <= Q
               (HPL's advice: a flat grid; each panel is factored down one process column)
    depth      look-ahead depth (0: none; 1: factor the next panel while updating the rest)
    bcast      panel broadcast: '1ring', '1ringM', '2ring', '2ringM', 'long', 'longM'; the
               modified (M) variants send the panel first to the owner of the next panel
    ndiv       sub-panels per recursion step of the panel factorization
    nbmin      the recursion stops at panels of at most nbmin columns, factored by pfact
    pfact      factorization of those base panels: 'left', 'crout' or 'right' looking
    rfact      the recursive panel factorization variant: 'left', 'crout' or 'right'
    swap       row swapping: 'binary-exchange', 'long' (spread-roll) or 'mix' (binary-exchange
               for panels of at most `swap_threshold` columns, long above)

Filters reject invalid grids and redundant or wasteful combinations: every process column must own
enough block columns for NB (load balance), the matrix must fit in memory, and knobs that cannot
change anything for the other choices (the modified broadcasts without look-ahead, pfact when the
recursion goes down to single columns) are kept at one representative value.

A filter REJECTS a configuration when it is true.
"""
import beastgen as beast

# -- settings (problem inputs) -------------------------------------------------------------------
N = beast.setting(60000)                # order of the matrix
nprocs = beast.setting(24)              # MPI processes
mem_per_proc_gib = beast.setting(16)    # memory for the matrix on each process
pmap = beast.setting('row', choices=['row', 'col'])  # rank placement on the grid
l1_transposed = beast.setting(True)     # L1 panel stored transposed
u_transposed = beast.setting(True)      # U panel stored transposed
equilibration = beast.setting(True)     # only used by the 'long' and 'mix' swaps
nb_min = beast.setting(64)              # NB candidates: nb_min, nb_min + nb_step, ..., nb_max
nb_max = beast.setting(384)
nb_step = beast.setting(32)
min_blocks_per_proc = beast.setting(16)  # block columns each process column must own

# the matrix (8-byte doubles, plus the right-hand side) must fit in memory
matrix_too_big = beast.filter(8 * N * (N + 1) > nprocs * mem_per_proc_gib * 2 ** 30)

# -- iterators -----------------------------------------------------------------------------------
NB = beast.range(nb_min, nb_max + 1, nb_step)

@beast.iterator
def P():
    """Process rows: the divisors of nprocs up to its square root (so that P <= Q)."""
    for p in range(1, nprocs + 1):
        if nprocs % p == 0 and p * p <= nprocs:
            yield p

depth = beast.values(0, 1, 2)
bcast = beast.values('1ring', '1ringM', '2ring', '2ringM', 'long', 'longM')
ndiv = beast.values(2, 3, 4)

nbmin = beast.values(1, 2, 4, 8, 16, 32)
pfact = beast.values('left', 'crout', 'right')
rfact = beast.values('left', 'crout', 'right')
swap = beast.values('binary-exchange', 'long', 'mix')

@beast.iterator
def swap_threshold():
    """Only the 'mix' swap reads the threshold (columns); the others get a single 0."""
    if swap == 'mix':
        return range(64, 257, 64)
    return range(0, 1)

# -- derived values ------------------------------------------------------------------------------
Q = nprocs // P
blocks = (N + NB - 1) // NB             # block rows (and block columns) of the matrix

# -- filters (each REJECTS when true) ------------------------------------------------------------
# load balance: every process column must own enough block columns
too_few_blocks = beast.filter(blocks < min_blocks_per_proc * Q)
# a very skinny grid makes each panel's broadcast along the process row too long
skinny_grid = beast.filter(Q > 16 * P)
# look-ahead overlaps the next panel's factorization with the broadcast: with a single process
# column there is nothing to overlap; deep look-ahead of wide panels costs more memory than it hides
useless_lookahead = beast.filter((Q == 1) & (depth > 0))
deep_lookahead = beast.filter((depth == 2) & (NB > 256))
# the modified broadcasts only differ from the plain ones when there is a look-ahead
modified_bcast_without_lookahead = beast.filter(
    (depth == 0) & ((bcast == '1ringM') | (bcast == '2ringM') | (bcast == 'longM')))
# the long (bandwidth-reducing) broadcasts only pay for several process columns
long_bcast_on_few_columns = beast.filter(((bcast == 'long') | (bcast == 'longM')) & (Q < 4))
# the recursion splits the panel into ndiv sub-panels until at most nbmin columns remain: an
# nbmin above NB // ndiv stops it at once (then ndiv and rfact are irrelevant)
no_recursion = beast.filter(nbmin > NB // ndiv)
# with nbmin = 1 the recursion goes down to single columns, where every pfact is the same
redundant_pfact = beast.filter((nbmin == 1) & (pfact != 'crout'))
