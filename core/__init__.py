"""MarginLab core: kernels, online SVM solvers, query strategies, the
active-learning loop, metrics, datasets, experiments and the command line.

Imports neither Streamlit nor SQLAlchemy.
"""

__version__ = "0.1.0"
