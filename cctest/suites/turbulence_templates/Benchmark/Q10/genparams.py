import random
import string


# Parameter rows for the question: the hand-picked rows of manually_chosen_params.txt (edge
# cases) first, then random valid rows until there are 100 distinct ones.
def gen_params(q_no, seed):
    if seed != 'default':
        random.seed(seed)
    with open(f'Q{q_no}/manually_chosen_params.txt') as f:
        params = [tuple(int(v) for v in line.split()) for line in f if line.strip()]
    while len(params) < 100:
        row = draw()
        if row not in params:
            params.append(row)
    return params


def draw():
    return (random.randint(1, 200),)
