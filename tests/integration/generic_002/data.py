# data.py (seed 002)

import torch


class OnesDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, index):
        return torch.Tensor([1.0]), torch.Tensor([1.0])


def build_datasets(batch_size):
    train_data = torch.utils.data.DataLoader(OnesDataset(), batch_size=batch_size)
    eval_data = torch.utils.data.DataLoader(OnesDataset(), batch_size=batch_size)
    return train_data, eval_data
