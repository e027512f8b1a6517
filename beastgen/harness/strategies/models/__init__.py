"""The guided search's models of log run time (:class:`.base.Model`: fitted on this run's
measurements, they score candidates by a mean and a spread): a Thompson-sampled ridge regression
(:mod:`.ridge`), an extra-trees forest (:mod:`.extra_trees`), a Gaussian process
(:mod:`.gaussian_process`) and, with priors, the sources' trusted consensus (:mod:`.transfer`)
and their linear part (:mod:`.residual`)."""
